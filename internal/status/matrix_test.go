package status

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// matrixEnvs: web in sync in qa; in prod pending in a, rolling out in b,
// failed in c, drifting in d.
func matrixEnvs(t *testing.T) []*Environment {
	ch := func(target string) reconcile.Change {
		return reconcile.Change{Service: "web", Target: target, Kind: "Deployment", Name: "web", Container: "web", From: "r/web:1.0", To: "r/web:2.0"}
	}
	st := func(target, state string) ServiceTarget {
		return ServiceTarget{Target: target, State: state, Images: []Image{{DockerName: "web", Desired: "r/web:2.0", Live: "r/web:1.0"}}}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []*Environment{
		{Name: "qa", Observation: Observation{Services: []Service{{Name: "web", Version: "2.0", Targets: []ServiceTarget{
			{Target: "a", State: StateInSync, Images: []Image{{DockerName: "web", Desired: "web:2.0", Live: "web:2.0"}}}}}}},
			History: []approval.Entry{{Revision: "r1", Result: approval.ResultSucceeded, Changes: mustJSON(t, []reconcile.Change{{Service: "web", Target: "a", To: "r/web:2.0"}}), Finished: t0}}},
		{Name: "prod", Observation: Observation{Services: []Service{{Name: "web", Targets: []ServiceTarget{
			st("a", StateOutOfSync), st("b", StateOutOfSync), st("c", StateOutOfSync), st("d", StateOutOfSync), st("e", StateProblem)}}}},
			Pending:    &approval.Pending{PlanHash: "h2", Plan: mustJSON(t, reconcile.Plan{Changes: []reconcile.Change{ch("a")}})},
			InFlight:   &approval.InFlight{PlanHash: "h1", Changes: mustJSON(t, []reconcile.Change{ch("b")})},
			LastResult: &approval.Entry{Result: approval.ResultFailed, Changes: mustJSON(t, []reconcile.Change{ch("c")})}},
	}
}

func TestNewMatrix(t *testing.T) {
	m := NewMatrix(matrixEnvs(t), time.UTC)
	var got []string
	for _, c := range m.Services[0].Cells {
		got = append(got, c.State)
		for _, tc := range c.Targets {
			got = append(got, tc.Target+" "+tc.State+" "+tc.Live+"→"+tc.Desired)
		}
	}
	want := []string{"in sync", "a in sync 2.0→2.0",
		"failed", "a pending 1.0→2.0", "b rolling out 1.0→2.0", "c failed 1.0→2.0", "d out of sync 1.0→2.0", "e problem 1.0→2.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if h := m.Environments[1]; h.Pending != "h2" || h.Rolling != "h1" || h.LastResult != "failed" {
		t.Errorf("prod head %+v", h)
	}
	if !m.Services[0].Cells[1].Targets[3].Drift || m.Services[0].Cells[1].Targets[0].Drift {
		t.Errorf("drift: only d drifts")
	}
}

func TestWhere(t *testing.T) {
	envs := matrixEnvs(t)
	envs[0].Services[0].Targets[0].Images[0].Live = "web:2.0@sha256:0123456789abcdef"
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"web", []string{"qa a running", "prod a running", "prod b running", "prod c running", "prod d running", "prod e running"}},
		{"WEB", []string{"qa a running", "prod a running", "prod b running", "prod c running", "prod d running", "prod e running"}},
		{"2.0", []string{"qa a running", "prod a coming", "prod b coming", "prod c coming", "prod d coming", "prod e coming"}},
		{"1.0", []string{"prod a running", "prod b running", "prod c running", "prod d running", "prod e running"}},
		{"0123456", []string{"qa a running"}},
		{"sha256:0123456789ab", []string{"qa a running"}},
		{"012345", nil}, // too short for a digest prefix
		{"", nil},
	} {
		t.Run(tc.q, func(t *testing.T) {
			var got []string
			for _, p := range Where(envs, tc.q) {
				s := p.Environment + " " + p.Target + " "
				if p.Running {
					s += "running"
				} else {
					s += "coming"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Where(%q) (-want +got):\n%s", tc.q, diff)
			}
		})
	}
	if p := Where(envs, "web")[0]; p.Since.IsZero() || p.SinceRevision != "r1" {
		t.Errorf("qa's web since %v %q, want the history's r1", p.Since, p.SinceRevision)
	}
}

// TestMatrixReleaseWait: an environment deployed and waiting for its
// release approval (the apply in flight and the pending release on one
// planHash) is shown pending the release, not rolling out: the head names
// the pending plan with release set and nothing rolling, and the deployed
// cells are pending.
func TestMatrixReleaseWait(t *testing.T) {
	changes := []reconcile.Change{{Service: "web", Target: "a", Kind: "Deployment", Name: "web", Container: "web", From: "r/web:1.0", To: "r/web:2.0"}}
	env := &Environment{Name: "devel", Observation: Observation{Services: []Service{{Name: "web", Version: "2.0", Targets: []ServiceTarget{
		{Target: "a", State: StateInSync, Images: []Image{{DockerName: "web", Desired: "r/web:2.0", Live: "r/web:2.0"}}},
		{Target: "b", State: StateInSync, Images: []Image{{DockerName: "web", Desired: "r/web:2.0", Live: "r/web:2.0"}}}}}}},
		Pending:  &approval.Pending{Revision: "r2", PlanHash: "h2", Release: true, Required: 1, Plan: mustJSON(t, reconcile.Plan{Changes: changes})},
		InFlight: &approval.InFlight{Revision: "r2", PlanHash: "h2", Changes: mustJSON(t, changes)}}
	m := NewMatrix([]*Environment{env}, time.UTC)
	want := MatrixEnvironment{Name: "devel", Pending: "h2", PendingRevision: "r2", Release: true, Required: 1}
	if diff := cmp.Diff(want, m.Environments[0]); diff != "" {
		t.Errorf("head (-want +got):\n%s", diff)
	}
	var got []string
	for _, tc := range m.Services[0].Cells[0].Targets {
		got = append(got, tc.Target+" "+tc.State)
	}
	if diff := cmp.Diff([]string{"a pending", "b in sync"}, got); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}

// TestMatrixShowsWhy: the head of an environment says what its pending plan's approval rules ask and
// what it waits for (its deploy window), as the page and `reconciler status` show them.
func TestMatrixShowsWhy(t *testing.T) {
	const rule = "payments-api changes need 2 approvers from acme/payments"
	const window = "waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"
	env := &Environment{Name: "prod", Phase: PhaseDeferred, Observation: Observation{Waiting: []string{window}},
		Pending: &approval.Pending{Revision: "r2", PlanHash: "h2", Required: 2, Reasons: []string{rule}}}
	m := NewMatrix([]*Environment{env}, time.UTC)
	want := MatrixEnvironment{Name: "prod", Phase: PhaseDeferred, Pending: "h2", PendingRevision: "r2", Required: 2,
		Reasons: []string{rule}, Waiting: []string{window}}
	if diff := cmp.Diff(want, m.Environments[0]); diff != "" {
		t.Errorf("head (-want +got):\n%s", diff)
	}
}

func TestInStageOrder(t *testing.T) {
	for _, tc := range []struct {
		name          string
		names, stages []string
		want          []string
	}{
		{name: "no stages", names: []string{"devel", "prod", "staging"}, want: []string{"devel", "prod", "staging"}},
		{name: "stage order", names: []string{"devel", "prod", "staging"}, stages: []string{"devel", "staging", "prod"},
			want: []string{"devel", "staging", "prod"}},
		{name: "stages not configured are left out, others follow", names: []string{"devel", "prod", "qa", "staging"},
			stages: []string{"staging", "canary", "prod", "staging"}, want: []string{"staging", "prod", "devel", "qa"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, InStageOrder(tc.names, tc.stages)); diff != "" {
				t.Errorf("InStageOrder (-want +got):\n%s", diff)
			}
		})
	}
}
