package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditPolicy records the writes to workloads (Argo Rollouts' Rollouts and
// their status included), to ConfigMaps (the state),
// and to Environment resources (stagehand.io environments, their status
// included), at the Metadata level, once their response is sent; nothing
// else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
- level: Metadata
  verbs: [create, update, patch]
  resources:
  - group: apps
    resources: [deployments, statefulsets, daemonsets]
  - group: argoproj.io
    resources: [rollouts, rollouts/status]
- level: Metadata
  verbs: [create, update, patch, delete]
  resources:
  - group: ""
    resources: [configmaps]
- level: Metadata
  verbs: [create, update, patch, delete]
  resources:
  - group: stagehand.io
    resources: [environments, environments/status]
- level: None
`

// AuditLog is the path of kube-apiserver's audit log (see WithAuditLog).
func (e *Env) AuditLog() string { return filepath.Join(e.dir, "audit.log") }

// AuditEvent is one line of the audit log: the fields tests count by.
type AuditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// RequestReceivedTimestamp is when the API server received the request.
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
}

// AuditEvents reads the audit log written so far (WithAuditLog); none when
// nothing was written yet.
func (e *Env) AuditEvents() ([]AuditEvent, error) {
	f, err := os.Open(e.AuditLog())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	var evs []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var ev AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // a line being written as we read
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	return evs, nil
}
