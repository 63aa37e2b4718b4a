package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/herald"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestWaiting: the faults a status names, each with when it began or ends;
// a rate limit that has ended is not named.
func TestWaiting(t *testing.T) {
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	down := gitsource.Status{Failures: 3, FailingSince: now.Add(-time.Minute), LastError: "dial tcp: connection refused"}
	limited := &approval.RateLimitedError{Service: "GitHub", Until: now.Add(time.Hour), Err: errors.New("403")}
	unreachable := &reconcile.Plan{Problems: []reconcile.Problem{
		{Service: "web", Target: "eu", Message: "target eu unreachable since 07:59:00: timeout", Unreachable: true},
		{Service: "api", Target: "eu", Message: "target eu unreachable since 07:59:00: timeout", Unreachable: true},
		{Service: "web", Target: "us", Message: "forbidden"},
	}}
	for _, tc := range []struct {
		name    string
		source  gitsource.Status
		limited *approval.RateLimitedError
		plan    *reconcile.Plan
		want    []string
	}{
		{name: "nothing", plan: &reconcile.Plan{}},
		{name: "source down", source: down,
			want: []string{"source unreachable since 2026-11-24T07:59:00Z: dial tcp: connection refused"}},
		{name: "rate limited", limited: limited, want: []string{"GitHub rate limited until 2026-11-24T09:00:00Z"}},
		{name: "rate limit over", limited: &approval.RateLimitedError{Service: "GitHub", Until: now.Add(-time.Second)}},
		{name: "all", source: down, limited: limited, plan: unreachable, want: []string{
			"GitHub rate limited until 2026-11-24T09:00:00Z",
			"source unreachable since 2026-11-24T07:59:00Z: dial tcp: connection refused",
			"API server of target eu unreachable: target eu unreachable since 07:59:00: timeout",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &worker{workerDeps: workerDeps{now: func() time.Time { return now },
				source: health{tc.source}}, tell: limitedBy(t, tc.limited, now)}
			if diff := cmp.Diff(tc.want, w.waiting(tc.plan)); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}

// health is a source that only says how it is.
type health struct{ st gitsource.Status }

func (health) Latest() (gitsource.Snapshot, bool)                     { return gitsource.Snapshot{}, false }
func (health) Poll(context.Context) (gitsource.Snapshot, error)       { return gitsource.Snapshot{}, nil }
func (health) At(string) (gitsource.Snapshot, error)                  { return gitsource.Snapshot{}, nil }
func (h health) Status() gitsource.Status                             { return h.st }
func (health) Descends(context.Context, string, string) (bool, error) { return false, nil }

// limitedBy is a herald whose gate last answered a Propose with rl (nil: it
// took the plan), at now.
func limitedBy(t *testing.T, rl *approval.RateLimitedError, now time.Time) *herald.Herald {
	t.Helper()
	var err error
	if rl != nil {
		err = rl
	}
	h := herald.New(herald.Config{Env: "prod", Gate: failingGate{err}, Metrics: meter.New(nil), Log: logr.Discard(),
		Now: func() time.Time { return now }})
	h.Propose(context.Background(), failingGate{err}, approval.Proposal{Environment: "prod", Plan: &reconcile.Plan{PlanHash: "sha256:p"}})
	return h
}

// failingGate answers every Propose with err.
type failingGate struct{ err error }

func (g failingGate) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	return approval.Decision{}, g.err
}
func (failingGate) Superseded(context.Context, approval.Proposal, string) error          { return nil }
func (failingGate) Completed(context.Context, approval.Proposal, approval.Outcome) error { return nil }
