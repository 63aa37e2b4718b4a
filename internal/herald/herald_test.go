package herald

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// gate answers each Propose with the next of errs (nil once they run out).
type gate struct{ errs []error }

func (g *gate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	if len(g.errs) == 0 {
		return approval.Decision{}, nil
	}
	err := g.errs[0]
	g.errs = g.errs[1:]
	return approval.Decision{}, err
}
func (*gate) Superseded(context.Context, approval.Proposal, string) error          { return nil }
func (*gate) Completed(context.Context, approval.Proposal, approval.Outcome) error { return nil }

// TestProposeRemembers: a plan the gate took is not due again until the
// repropose period has passed; one it refused is due at once and counted as
// a gate failure; a rate limit is in force until it ends; Forget makes the
// plan due again.
func TestProposeRemembers(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	limit := &approval.RateLimitedError{Service: "GitHub", Until: now.Add(time.Minute)}
	g := &gate{errs: []error{errors.New("GitHub down"), limit}}
	m := meter.New(nil)
	h := New(Config{Env: "prod", Gate: g, Metrics: m, Log: logr.Discard(), Now: clock, Repropose: 5 * time.Minute})
	prop := approval.Proposal{Environment: "prod", Revision: "r1", Plan: &reconcile.Plan{PlanHash: "sha256:p"}}
	ctx := context.Background()

	steps := []struct {
		name      string
		propose   bool
		advance   time.Duration
		forget    bool
		wantDue   bool
		wantLimit bool
	}{
		{name: "never proposed", wantDue: true},
		{name: "refused", propose: true, wantDue: true},
		{name: "rate limited", propose: true, wantDue: true, wantLimit: true},
		{name: "taken", propose: true, wantDue: false},
		{name: "a minute later", advance: time.Minute, wantDue: false},
		{name: "a repropose period later", advance: 4 * time.Minute, wantDue: true},
		{name: "taken again", propose: true, wantDue: false},
		{name: "forgotten", forget: true, wantDue: true},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.propose {
			h.Propose(ctx, g, prop)
		}
		if s.forget {
			h.Forget()
		}
		if got := h.Due(prop); got != s.wantDue {
			t.Errorf("%s: Due = %v, want %v", s.name, got, s.wantDue)
		}
		if got := h.Limited() != nil; got != s.wantLimit {
			t.Errorf("%s: rate limited = %v, want %v", s.name, got, s.wantLimit)
		}
	}
	if got := gateFailures(t, m); got != 2 {
		t.Errorf("gate failures counted = %v, want 2", got)
	}
}

// gateFailures is prod's stagehand_failures_total{stage="gate"} in m.
func gateFailures(t *testing.T, m *meter.Metrics) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "stagehand_failures_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["environment"] == "prod" && labels["stage"] == "gate" {
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}
