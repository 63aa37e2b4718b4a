package github_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// TestCheckRunTimesOnGitHubsClock: a replica whose clock is two hours ahead
// or behind writes its check runs' completed_at on GitHub's clock (read
// from the Date of GitHub's answers), on the run it creates and on the one
// it completes by an update; prbot judges soak from these times.
func TestCheckRunTimesOnGitHubsClock(t *testing.T) {
	for _, skew := range []time.Duration{2 * time.Hour, -2 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			c, err := github.New(f.cfg, github.WithClock(func() time.Time { return time.Now().Add(skew) }))
			if err != nil {
				t.Fatal(err)
			}
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
			before := time.Now().Add(-2 * time.Second)
			if _, err := c.Checks().Propose(ctx, plan("prod", sha, 2)); err != nil {
				t.Fatal(err)
			}
			// A changed plan: the first run is completed (neutral) by an update, a second created.
			if _, err := c.Checks().Propose(ctx, plan("prod", sha, 3)); err != nil {
				t.Fatal(err)
			}
			after := time.Now().Add(2 * time.Second)
			rs := f.srv.Repo(owner, repo).CheckRuns()
			if len(rs) != 2 {
				t.Fatalf("%d check runs, want 2", len(rs))
			}
			for _, r := range rs {
				if r.CompletedAt.Before(before) || r.CompletedAt.After(after) {
					t.Errorf("run %d (%s) completed_at %s, want between %s and %s: GitHub's clock, not the replica's %s off",
						r.ID, r.Conclusion, r.CompletedAt, before, after, skew)
				}
			}
			if d := c.Now().Sub(time.Now()); d < -2*time.Second || d > 2*time.Second {
				t.Errorf("client's GitHub clock is %s off GitHub's", d)
			}
		})
	}
}

// TestRateLimitResetOnGitHubsClock: X-RateLimit-Reset is GitHub's time; a
// replica two hours behind waits until then (a second or two), rather than
// two hours, which is past the longest wait, so it gave up at once.
func TestRateLimitResetOnGitHubsClock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	c, err := github.New(f.cfg, github.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }),
		github.WithRetry(github.RetryPolicy{MaxAttempts: 3, BaseDelay: 10 * time.Millisecond, MaxWait: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	p := plan("prod", sha, 1)
	if _, err := c.Checks().Propose(ctx, p); err != nil { // the client reads GitHub's clock from these answers
		t.Fatal(err)
	}
	f.srv.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: "/repos/{owner}/{repo}/check-runs/{check_run_id}", Status: http.StatusForbidden,
		RateLimitReset: time.Now().Add(time.Second)})
	start := time.Now()
	if err := c.Checks().Applying(ctx, p, "maria"); err != nil {
		t.Fatalf("Applying through a primary rate limit ending in a second, two hours behind GitHub: %v", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("waited %s for a rate limit ending a second later", took.Round(100*time.Millisecond))
	}
	if n := f.srv.Faults().Left(); n != 0 {
		t.Errorf("%d faults not reached", n)
	}
}
