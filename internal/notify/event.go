package notify

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The events, as named in reconciler.yaml's notifications[].events; the
// CloudEvents type is TypePrefix + the name.
const (
	PlanPending       = "plan.pending"
	PlanApproved      = "plan.approved"
	PlanRejected      = "plan.rejected"
	PlanSuperseded    = "plan.superseded"
	DeploySucceeded   = "deploy.succeeded"
	DeployFailed      = "deploy.failed"
	DeployInterrupted = "deploy.interrupted"
	DeployDeferred    = "deploy.deferred"
	DeployBreakGlass  = "deploy.break-glass"
	LockTaken         = "lock.taken"
	LockReleased      = "lock.released"
)

// TypePrefix starts every CloudEvents type Stagehand sends.
const TypePrefix = "sh.stagehand."

// Events lists every event name but the sequence's, whose names depend on
// the stage and the task (see SequenceEvent).
func Events() []string {
	return []string{PlanPending, PlanApproved, PlanRejected, PlanSuperseded, DeploySucceeded, DeployFailed, DeployInterrupted,
		DeployDeferred, DeployBreakGlass, LockTaken, LockReleased}
}

// Data is the data of every event (application/json).
type Data struct {
	Environment string   `json:"environment"`
	Revision    string   `json:"revision"`
	PlanHash    string   `json:"planHash"`
	Changes     []Change `json:"changes"`
	Approver    string   `json:"approver,omitempty"`
	// Result is succeeded, failed, interrupted or rejected once decided.
	Result  string `json:"result,omitempty"`
	Message string `json:"message,omitempty"`
	// SupersededBy is the revision whose plan replaced a superseded one
	// ("" when nothing is left to apply).
	SupersededBy string `json:"supersededBy,omitempty"`
	// Release marks a plan.pending of a plan deployed and verified that
	// waits for its release approval (an approval task after the
	// deployment), not for the approval to apply it.
	Release bool `json:"release,omitempty"`
	// BreakGlass is who let the plan through the closed deploy windows, why and when
	// (deploy.break-glass).
	BreakGlass *approval.BreakGlass `json:"breakGlass,omitempty"`
}

// Change is one image change of a plan.
type Change struct {
	Service string `json:"service"`
	Target  string `json:"target"`
	// Workload is namespace/Kind/name.
	Workload  string `json:"workload"`
	Container string `json:"container"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// message is one event on its way to the sinks.
type message struct {
	name  string // PlanPending, ...
	event event.Event
	data  Data
	// sequence marks a step of a delivery sequence (Slack and Teams get
	// those only when their events filter names them).
	sequence bool
	// envs are the environments the event concerns, for the sinks'
	// environments filter (nil: data.Environment).
	envs []string
	// headline and text replace title() and summary() when set.
	headline, text string
}

// origin is where an event comes from (its CloudEvent source) and what it
// is about (its subject).
type origin struct {
	source, subject string
}

// ofEnvironment is the origin of the events about environment env.
func ofEnvironment(env string) origin { return origin{source: "stagehand/" + env, subject: env} }

// cloudEvent builds the CloudEvent name from o with data at t.
func cloudEvent(name string, o origin, data any, t time.Time) (event.Event, error) {
	source, subject := o.source, o.subject
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return event.Event{}, fmt.Errorf("making an event id: %w", err)
	}
	e := event.New()
	e.SetID(hex.EncodeToString(id))
	e.SetType(TypePrefix + name)
	e.SetSource(source)
	e.SetSubject(subject)
	e.SetTime(t.UTC())
	if err := e.SetData(event.ApplicationJSON, data); err != nil {
		return event.Event{}, fmt.Errorf("encoding event data: %w", err)
	}
	if err := e.Validate(); err != nil {
		return event.Event{}, fmt.Errorf("building event %s: %w", name, err)
	}
	return e, nil
}

// newMessage builds the CloudEvent name about p at t.
func newMessage(name string, p approval.Proposal, d Data, t time.Time) (message, error) {
	d.Environment, d.Revision = p.Environment, p.Revision
	if p.Plan != nil {
		d.PlanHash = p.Plan.PlanHash
		d.Changes = changes(p.Plan.Changes)
	}
	if d.Changes == nil {
		d.Changes = []Change{}
	}
	e, err := cloudEvent(name, ofEnvironment(p.Environment), d, t)
	if err != nil {
		return message{}, err
	}
	return message{name: name, event: e, data: d}, nil
}

func changes(cs []reconcile.Change) []Change {
	out := make([]Change, 0, len(cs))
	for _, c := range cs {
		out = append(out, Change{Service: c.Service, Target: c.Target, Workload: c.Namespace + "/" + c.Kind + "/" + c.Name,
			Container: c.Container, From: c.From, To: c.To})
	}
	return out
}

// title is the one-line headline of m.
func (m message) title() string {
	if m.headline != "" {
		return m.headline
	}
	env := m.data.Environment
	switch m.name {
	case PlanPending:
		if m.data.Release {
			return "Deployed to " + env + "; waiting for release approval"
		}
		return "Plan waiting for approval in " + env
	case PlanApproved:
		return "Plan approved in " + env
	case PlanRejected:
		return "Plan rejected in " + env
	case PlanSuperseded:
		return "Plan superseded in " + env
	case DeploySucceeded:
		return "Deployed to " + env
	case DeployFailed:
		return "Deploy failed in " + env
	case DeployInterrupted:
		return "Deploy interrupted in " + env
	case DeployDeferred:
		return "Deploy deferred in " + env + " until its deploy window"
	case DeployBreakGlass:
		return "Break-glass: deploying to " + env + " through its closed deploy windows"
	}
	return m.name + " in " + env
}

// summary says in a sentence or two what happened.
func (m message) summary() string {
	if m.text != "" {
		return m.text
	}
	d := m.data
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d change(s) at revision %s", m.title(), len(d.Changes), gitsource.ShortRevision(d.Revision))
	if d.Approver != "" {
		fmt.Fprintf(&b, ", approved by %s", d.Approver)
	}
	if m.name == PlanSuperseded {
		if d.SupersededBy != "" {
			fmt.Fprintf(&b, ", replaced by revision %s", gitsource.ShortRevision(d.SupersededBy))
		} else {
			b.WriteString(", nothing is left to apply")
		}
	}
	b.WriteString(".")
	if d.Message != "" {
		b.WriteString(" " + d.Message)
	}
	return b.String()
}

// truncate cuts s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
