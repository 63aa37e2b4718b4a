package lock

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	_ UnlockRecorder = (*Kubernetes)(nil)
	_ UnlockRecorder = (*Memory)(nil)
)

// eventsResource is core/v1 Events, where an admin's unlock is recorded.
var eventsResource = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// UnlockedReason is the reason of the Event recording an admin's unlock.
const UnlockedReason = "UnlockedByAdmin"

// RecordUnlock implements UnlockRecorder: a Normal Event with reason
// UnlockedByAdmin on the Lock object, in the locks' namespace, so `kubectl
// get events` shows who removed someone else's lock.
func (k *Kubernetes) RecordUnlock(ctx context.Context, l Lock, message string) error {
	now := time.Now().UTC().Format(time.RFC3339)
	name := ObjectName(l.Path)
	ev := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Event",
		"metadata": map[string]any{"generateName": name + ".", "namespace": k.namespace},
		"involvedObject": map[string]any{
			"apiVersion": Resource.GroupVersion().String(), "kind": kind, "namespace": k.namespace,
			"name": name, "uid": l.ID, "resourceVersion": l.Version,
		},
		"reason": UnlockedReason, "message": message, "type": "Normal",
		"source":         map[string]any{"component": "stagehand"},
		"firstTimestamp": now, "lastTimestamp": now, "count": int64(1),
	}}
	if _, err := k.events.Namespace(k.namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("recording an Event on lock %s: %w", l.Path, err)
	}
	return nil
}

// RecordUnlock implements UnlockRecorder: the message is kept in memory (see Unlocks).
func (m *Memory) RecordUnlock(_ context.Context, _ Lock, message string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unlocks = append(m.unlocks, message)
	return nil
}

// Unlocks returns the recorded admin unlocks, oldest first.
func (m *Memory) Unlocks() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.unlocks...)
}
