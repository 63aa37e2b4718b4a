package envresource

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

const rev = "0123456789abcdef0123456789abcdef01234567"

func inSync() []status.Service {
	return []status.Service{{Name: "web", Targets: []status.ServiceTarget{{Target: "a", State: status.StateInSync}}}}
}

// reasons lists each condition as Type=Status/Reason.
func reasons(s Status) []string {
	var out []string
	for _, c := range s.Conditions {
		out = append(out, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	return out
}

// TestStatusOf: the conditions say, with a reason, what the environment view
// shows, and Deployed is True only for the observed revision deployed with its
// sequence passed.
func TestStatusOf(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	env := func(mut func(v *status.Environment)) *status.Environment {
		v := &status.Environment{Name: "prod", Observation: status.Observation{Revision: rev, Services: inSync()}, Locks: []lock.Lock{}}
		mut(v)
		return v
	}
	tests := []struct {
		name string
		v    *status.Environment
		want []string
	}{{
		name: "deployed",
		v: env(func(v *status.Environment) {
			v.LastResult = &approval.Entry{ID: 3, Revision: rev, Result: approval.ResultSucceeded, Finished: at}
		}),
		want: []string{"Ready=True/Observed", "Deployed=True/Deployed", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=False/Healthy"},
	}, {
		name: "nothing observed",
		v:    &status.Environment{Name: "prod"},
		want: []string{"Ready=False/NotObserved", "Deployed=False/NotObserved", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=False/Healthy"},
	}, {
		name: "awaiting approval",
		v: env(func(v *status.Environment) {
			v.Services[0].Targets[0].State = status.StateOutOfSync
			v.PlanHash = "sha256:p"
			v.Pending = &approval.Pending{Revision: rev, PlanHash: "sha256:p", Required: 2, Approvals: []approval.Approval{{Approver: "github:alice"}}}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/AwaitingApproval", "AwaitingApproval=True/PlanProposed", "Locked=False/NoLocks", "Degraded=False/Healthy"},
	}, {
		name: "applying",
		v:    env(func(v *status.Environment) { v.InFlight = &approval.InFlight{Revision: rev, PlanHash: "sha256:p"} }),
		want: []string{"Ready=True/Observed", "Deployed=False/Applying", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=False/Healthy"},
	}, {
		name: "verifying",
		v: env(func(v *status.Environment) {
			v.Sequence = &sequence.State{Revision: rev, Status: sequence.StatusStarted, Tasks: []sequence.TaskState{{Name: "deployment", Status: sequence.StatusFinished}, {Name: "test", Status: sequence.StatusStarted}}}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/Verifying", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=False/Healthy"},
	}, {
		name: "failed",
		v: env(func(v *status.Environment) {
			v.LastResult = &approval.Entry{ID: 4, Revision: rev, Result: approval.ResultFailed, Message: "rollout timed out"}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/Failed", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=True/Failed"},
	}, {
		name: "rejected",
		v: env(func(v *status.Environment) {
			v.LastResult = &approval.Entry{ID: 5, Revision: rev, Result: approval.ResultRejected, Approver: "github:bob"}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/Rejected", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=True/Rejected"},
	}, {
		name: "rolled back",
		v: env(func(v *status.Environment) {
			v.LastResult = &approval.Entry{ID: 6, Revision: rev, Result: approval.ResultRolledBack}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/RolledBack", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=True/RolledBack"},
	}, {
		name: "an older revision failed: the new one is judged alone",
		v: env(func(v *status.Environment) {
			v.LastResult = &approval.Entry{ID: 6, Revision: "older", Result: approval.ResultFailed}
		}),
		want: []string{"Ready=True/Observed", "Deployed=True/Deployed", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=False/Healthy"},
	}, {
		name: "sequence failed",
		v: env(func(v *status.Environment) {
			v.Sequence = &sequence.State{Revision: rev, Status: sequence.StatusFinished, Result: "fail", Message: "smoke test failed"}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/Failed", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=True/Failed"},
	}, {
		name: "locked and blocked",
		v: env(func(v *status.Environment) {
			v.Services[0].Targets[0].State = status.StateBlocked
			v.Locks = []lock.Lock{{Path: "apps/prod", Type: lock.Freeze, Author: "github:carol"}}
		}),
		want: []string{"Ready=True/Observed", "Deployed=False/Blocked", "AwaitingApproval=False/NothingPending", "Locked=True/LockHeld", "Degraded=False/Healthy"},
	}, {
		name: "plan error",
		v:    env(func(v *status.Environment) { v.Error = "resolving environments/prod/manifest.json: bad" }),
		want: []string{"Ready=False/PlanFailed", "Deployed=False/PlanFailed", "AwaitingApproval=False/NothingPending", "Locked=False/NoLocks", "Degraded=True/PlanFailed"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StatusOf(tt.v, status.PhaseIdle, Object{Generation: 2}, at)
			if diff := cmp.Diff(tt.want, reasons(got)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, c := range got.Conditions {
				if c.ObservedGeneration != 2 || c.Message == "" || !c.LastTransitionTime.Time.Equal(at) {
					t.Errorf("condition %s: observedGeneration %d, message %q, transition %v; want 2, a message, %v", c.Type, c.ObservedGeneration, c.Message, c.LastTransitionTime, at)
				}
			}
		})
	}
}

// TestStatusOfKeepsTransitions: a condition whose status did not change
// keeps its lastTransitionTime, so a status computed again is the same bytes.
func TestStatusOfKeepsTransitions(t *testing.T) {
	v := &status.Environment{Name: "devel", Observation: status.Observation{Revision: rev, Services: inSync()}}
	first := StatusOf(v, status.PhaseIdle, Object{Generation: 1}, time.Unix(100, 0))
	again := StatusOf(v, status.PhaseIdle, Object{Generation: 1, Conditions: first.Conditions}, time.Unix(200, 0))
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("status computed again later (-first +again):\n%s", diff)
	}
	v.Pending = &approval.Pending{Revision: rev, PlanHash: "sha256:p"}
	changed := StatusOf(v, status.PhaseAwaitingApproval, Object{Generation: 1, Conditions: first.Conditions}, time.Unix(300, 0))
	for _, c := range changed.Conditions {
		moved := c.Type == ConditionDeployed || c.Type == ConditionAwaitingApproval
		if got := c.LastTransitionTime.Equal(&metav1.Time{Time: time.Unix(300, 0)}); got != moved {
			t.Errorf("condition %s transition at %v; moved: %v", c.Type, c.LastTransitionTime, moved)
		}
	}
	if changed.Pending.Summary != "0123456789ab 0/1" || changed.Phase != "AwaitingApproval" {
		t.Errorf("pending summary %q, phase %q", changed.Pending.Summary, changed.Phase)
	}
}

// TestStatusOfApprovers: the last deploy lists its approvers, one approver
// too (a history entry keeps one in Approver alone), never who rejected.
func TestStatusOfApprovers(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    approval.Entry
		want []string
	}{
		{name: "one", e: approval.Entry{Result: approval.ResultSucceeded, Approver: "github:alice"}, want: []string{"github:alice"}},
		{name: "two", e: approval.Entry{Result: approval.ResultSucceeded, Approver: "github:alice, github:bob", Approvers: []string{"github:alice", "github:bob"}},
			want: []string{"github:alice", "github:bob"}},
		{name: "rejected", e: approval.Entry{Result: approval.ResultRejected, Approver: "github:bob"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			e.Revision = rev
			v := &status.Environment{Name: "prod", Observation: status.Observation{Revision: rev, Services: inSync()}, LastResult: &e}
			got := StatusOf(v, status.PhaseIdle, Object{Generation: 1}, time.Unix(0, 0))
			if diff := cmp.Diff(tt.want, got.LastDeploy.Approvers); diff != "" {
				t.Errorf("lastDeploy.approvers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusOfDuringPass: while a pass applies or verifies, before it
// writes what it observed (nothing yet in a first pass, the revision before
// otherwise), the Deployed condition follows the phase.
func TestStatusOfDuringPass(t *testing.T) {
	running := &sequence.State{Revision: "new", Status: sequence.StatusStarted, Tasks: []sequence.TaskState{{Name: "deployment", Status: sequence.StatusFinished}, {Name: "test", Status: sequence.StatusStarted}}}
	for _, tt := range []struct {
		name  string
		v     *status.Environment
		phase status.Phase
		want  string
	}{
		{name: "applying, nothing observed yet", v: &status.Environment{Name: "devel", InFlight: &approval.InFlight{Revision: rev}}, phase: status.PhaseApplying, want: "Applying"},
		{name: "applying, the in-flight record not read", v: &status.Environment{Name: "devel"}, phase: status.PhaseApplying, want: "Applying"},
		{name: "verifying a revision newer than the one observed", v: &status.Environment{Name: "devel", Observation: status.Observation{Revision: rev, Services: inSync()}, Sequence: running},
			phase: status.PhaseVerifying, want: "Verifying"},
		{name: "rolling back", v: &status.Environment{Name: "devel", Observation: status.Observation{Revision: rev, Services: inSync()}}, phase: status.PhaseRollingBack, want: "RollingBack"},
		{name: "idle, nothing observed", v: &status.Environment{Name: "devel"}, phase: status.PhaseIdle, want: "NotObserved"},
		{name: "deferred to the deploy window, approved and pending", v: &status.Environment{Name: "prod", Observation: status.Observation{Revision: rev,
			Services: inSync(), PlanHash: "h", Waiting: []string{"waiting for the deploy window (inside the deny window year-end): opens …"}},
			Pending: &approval.Pending{Revision: rev, PlanHash: "h", Required: 1, Approvals: []approval.Approval{{Approver: "github:alice"}}}},
			phase: status.PhaseDeferred, want: "Deferred"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := StatusOf(tt.v, tt.phase, Object{Generation: 1}, time.Unix(0, 0))
			c := meta.FindStatusCondition(got.Conditions, ConditionDeployed)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.want {
				t.Errorf("Deployed = %+v, want False/%s", c, tt.want)
			}
		})
	}
}
