package prbot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// checksNamed returns the check runs called name.
func checksNamed(f *fixture, name string) []githubtest.CheckRun {
	var out []githubtest.CheckRun
	for _, r := range f.Srv.Repo(owner, repo).CheckRuns() {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

func TestBumpRefusesLockedStageTargetAndService(t *testing.T) {
	ctx := context.Background()
	req := BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}
	tests := []struct {
		name    string
		path    string
		blocked bool
	}{
		{"stage", "apps/devel", true},
		{"prefix of the stage", "apps", true},
		{"target", "apps/devel/a", true},
		{"the service in a target", "apps/devel/a/checkout-api", true},
		{"another service", "apps/devel/a/search", false},
		{"another stage", "apps/staging", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, devel())
			b := f.bot(t)
			f.Lock(t, tt.path)
			res, err := b.Bump(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.blocked {
				if res.Blocked || res.PR != 1 {
					t.Errorf("bump beside a lock on %s = %+v, want PR 1 opened", tt.path, res)
				}
				return
			}
			if !res.Blocked || res.PR != 0 || res.Changed || !strings.Contains(res.Reason, "blocked: "+tt.path+" is locked until") {
				t.Errorf("bump under a lock on %s = %+v, want blocked, nothing written, naming the lock", tt.path, res)
			}
			if prs := f.Srv.Repo(owner, repo).PullRequests(); len(prs) != 0 {
				t.Errorf("pull requests = %+v, want none", prs)
			}
			if sha := f.Srv.Repo(owner, repo).Branch(res.Branch); sha != "" {
				t.Errorf("branch %s was created", res.Branch)
			}
			// Nothing to comment on: a neutral check run on main says why, once.
			if _, err := b.Bump(ctx, req); err != nil {
				t.Fatal(err)
			}
			runs := checksNamed(f, res.Branch)
			if len(runs) != 1 || runs[0].Conclusion != "neutral" || runs[0].HeadSHA != f.Srv.Repo(owner, repo).Branch("main") ||
				!strings.Contains(runs[0].Summary, "Not opening a bump of checkout-api to 1.6.0 in devel: blocked: "+tt.path) {
				t.Errorf("check runs %s = %+v, want one neutral run on main saying why", res.Branch, runs)
			}
			// Unlocked: the bump goes through and the note says so.
			f.Unlock(t, tt.path)
			res, err = b.Bump(ctx, req)
			if err != nil || res.Blocked || res.PR != 1 {
				t.Fatalf("bump after unlocking = %+v, %v; want PR 1", res, err)
			}
			if runs := checksNamed(f, res.Branch); len(runs) != 1 || runs[0].Summary != "No lock or hold blocks this bump any more." {
				t.Errorf("check runs after unlocking = %+v, want the note cleared", runs)
			}
		})
	}
}

func TestHoldStopsBumpAndPromote(t *testing.T) {
	ctx := context.Background()
	const pr = "https://github.com/acme/manifests/pull/9"
	hold := func(f *fixture, lockPath string) {
		t.Helper()
		if _, err := f.Locks.PlaceHold(ctx, lock.NewHold(lockPath, "alice", time.Now().Add(time.Hour), map[string]string{lock.HoldLinkPullRequest: pr})); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("bump", func(t *testing.T) {
		f := newFixture(t, devel())
		b := f.bot(t)
		req := BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"}
		res, err := b.Bump(ctx, req)
		if err != nil || res.PR != 1 {
			t.Fatalf("bump = %+v, %v", res, err)
		}
		head := f.Srv.Repo(owner, repo).Branch(res.Branch)
		hold(f, "apps/devel")
		// With a bump open, the hold leaves it untouched and says why on it.
		res, err = b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.7.0", AutoMerge: true, MergeTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Blocked || res.Merged || res.PR != 1 || !strings.Contains(res.Reason, "apps/devel/hold is held by a rollback of alice") {
			t.Errorf("bump under a hold = %+v, want blocked by the hold", res)
		}
		if got := f.Srv.Repo(owner, repo).Branch(res.Branch); got != head {
			t.Errorf("the bump branch moved under a hold: %s → %s", head, got)
		}
		comments := f.Srv.Repo(owner, repo).Comments(1)
		if len(comments) != 1 || !strings.Contains(comments[0].Body, "Not updating or merging this bump of checkout-api to 1.7.0: blocked: apps/devel/hold is held by a rollback") ||
			!strings.Contains(comments[0].Body, pr) {
			t.Errorf("comments = %+v, want one naming the hold and its pull request", comments)
		}
		// Released: the same bump updates the pull request, and the comment says the block is gone.
		if _, err := f.Locks.ReleaseHold(ctx, "apps/devel"); err != nil {
			t.Fatal(err)
		}
		if res, err = b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.7.0"}); err != nil || res.Blocked || !res.Changed {
			t.Fatalf("bump after release = %+v, %v", res, err)
		}
		if c := f.Srv.Repo(owner, repo).Comments(1); len(c) != 1 || !strings.Contains(c[0].Body, "No lock or hold blocks this bump any more.") {
			t.Errorf("comments after release = %+v", c)
		}
	})

	t.Run("promote", func(t *testing.T) {
		f := newFixture(t, prbottest.Spread(healthyPipeline))
		b := f.bot(t, WithClock(func() time.Time { return now }))
		healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)
		hold(f, "apps/staging")
		res, err := b.Promote(ctx, "devel", "staging", false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != ActionBlocked || !strings.Contains(res.Reason, "stage staging is locked: apps/staging/hold is held by a rollback of alice") {
			t.Errorf("promotion under a hold = %+v, want blocked by the hold", res)
		}
		if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
			t.Errorf("%d pull requests opened into a held stage", n)
		}
		if notes := blockedNotes(f); len(notes) != 1 || !strings.Contains(notes[0].Summary, "held by a rollback") {
			t.Errorf("notes = %+v, want a neutral check run naming the hold", notes)
		}
		if _, err := f.Locks.ReleaseHold(ctx, "apps/staging"); err != nil {
			t.Fatal(err)
		}
		if res, err = b.Promote(ctx, "devel", "staging", false); err != nil || res.Action != ActionOpened {
			t.Errorf("promotion after release = %+v, %v; want opened", res, err)
		}
	})

	t.Run("promote blocked by a service lock only for that service", func(t *testing.T) {
		f := newFixture(t, prbottest.Spread(healthyPipeline))
		b := f.bot(t, WithClock(func() time.Time { return now }))
		healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)
		f.Lock(t, "apps/staging/a/unrelated")
		if res, err := b.Promote(ctx, "devel", "staging", false); err != nil || res.Action != ActionOpened {
			t.Fatalf("promotion beside another service's lock = %+v, %v; want opened", res, err)
		}
		f.Lock(t, "apps/staging/a/payments-api")
		sha := f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/search.json": `{"services": [{"name": "search", "containers": [{"dockerTag": "0.2.0"}]}]}` + "\n"}, "bump search")
		healthyAt(f, "devel", sha, time.Minute)
		res, err := b.Promote(ctx, "devel", "staging", false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != ActionBlocked || !strings.Contains(res.Reason, "apps/staging/a/payments-api is locked") {
			t.Errorf("promotion moving a locked service = %+v, want blocked naming the service lock", res)
		}
	})
}
