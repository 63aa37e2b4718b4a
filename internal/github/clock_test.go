package github_test

import (
	"context"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/github"
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
			sha := f.srv.Commit(owner, repo, "main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
			before := time.Now().Add(-2 * time.Second)
			if _, err := c.Propose(ctx, plan("prod", sha, 2)); err != nil {
				t.Fatal(err)
			}
			// A changed plan: the first run is completed (neutral) by an update, a second created.
			if _, err := c.Propose(ctx, plan("prod", sha, 3)); err != nil {
				t.Fatal(err)
			}
			after := time.Now().Add(2 * time.Second)
			rs := f.srv.CheckRuns(owner, repo)
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
