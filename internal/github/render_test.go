package github_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

func TestRenderPlan(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	change := func(target, from, to string) reconcile.Change {
		return reconcile.Change{Service: "api", Target: target, Namespace: "apps", Kind: "Deployment", Name: "api", Container: "api", From: from, To: to}
	}
	p := &reconcile.Plan{
		Environment: "prod", Revision: "0123456789abcdef", PlanHash: "sha256:feed",
		Changes: []reconcile.Change{
			change("a", "r.io/team/api:1.0", "r.io/team/api:1.1@"+digest),
			change("b", "r.io/team/api:1.0@sha256:0000000000000000", "r.io/team/api:1.0@"+digest),
			change("c", "old.io/api:1.0", "r.io/team/api:1.1"),
		},
		Blocked:   []reconcile.Blocked{{Change: change("d", "r.io/team/api:1.0", "r.io/team/api:1.1"), Locks: []string{"apps/prod/d is locked | incident"}}},
		Problems:  []reconcile.Problem{{Service: "web", Target: "a", Message: "no workload\nlabelled web"}},
		Unmanaged: []reconcile.Unmanaged{{Target: "a", Kind: "CronJob", Name: "cleanup", Service: "cleanup"}},
	}
	out := github.RenderPlan(p, "note first", "")
	if diff := cmp.Diff("3 changes in 3 workloads, 1 blocked, 1 problem", out.Title); diff != "" {
		t.Errorf("title (-want +got):\n%s", diff)
	}
	for _, want := range []string{
		"note first\n\n**prod** at `0123456` · planHash `sha256:feed`",
		"#### Target `a` (namespace `apps`)",
		"| api | Deployment/api | api | `1.0` → `1.1` | `sha256:abababababab` |", // tag change with digest
		"| `1.0@sha256:000000000000` → `1.0@sha256:abababababab` |",              // digest-only change
		"| `old.io/api:1.0` → `r.io/team/api:1.1` | – |",                         // repository change, no digest
		"| apps/prod/d is locked \\| incident |",                                 // pipes escaped
		"- **web** in `a`: no workload labelled web",                             // one line
		"- `a` CronJob/cleanup (service `cleanup`)",
	} {
		if !strings.Contains(out.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, out.Summary)
		}
	}
}

func TestRenderResult(t *testing.T) {
	p := plan("prod", "0123456789", 2)
	for _, tc := range []struct {
		name      string
		outcomes  []reconcile.Outcome
		err       error
		wantTitle string
	}{
		{name: "all applied", outcomes: []reconcile.Outcome{reconcile.OutcomeSucceeded, reconcile.OutcomePatched}, wantTitle: "Applied 2 workloads"},
		{name: "one failed", outcomes: []reconcile.Outcome{reconcile.OutcomeSucceeded, reconcile.OutcomeFailed}, wantTitle: "Failed: 1 of 2 workloads"},
		{name: "blocked", outcomes: []reconcile.Outcome{reconcile.OutcomeBlocked, reconcile.OutcomeSucceeded}, wantTitle: "Failed: 1 of 2 workloads"},
		{name: "apply error", err: errors.New("cluster unreachable"), wantTitle: "Failed: 0 of 0 workloads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &reconcile.Result{Plan: p}
			for i, o := range tc.outcomes {
				res.Workloads = append(res.Workloads, reconcile.WorkloadResult{WorkloadKey: p.Changes[i].Key(), Service: p.Changes[i].Service, Changes: p.Changes[i : i+1], Outcome: o})
			}
			out := github.RenderResult(res, "maria", tc.err, "")
			if diff := cmp.Diff(tc.wantTitle, out.Title); diff != "" {
				t.Errorf("title (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(out.Summary, "Approved by @maria.") {
				t.Errorf("summary does not start with the approver:\n%s", out.Summary)
			}
		})
	}
}
