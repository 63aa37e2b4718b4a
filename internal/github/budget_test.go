package github_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

const listRuns = "/repos/{owner}/{repo}/commits/{ref}/check-runs"

// counted is how many requests have counted against the rate limit, and how many were sent at all.
func counted(f *fixture) (int, int) { return f.srv.Faults().RateLimitUsed(), len(f.srv.Requests()) }

// TestPollsAreConditional: proposing a pending plan again (what the daemon does every repropose period)
// lists the commit's check runs with If-None-Match; GitHub answers 304, which costs nothing, and the
// client sees the same runs. When the runs change, the next listing sees the change.
func TestPollsAreConditional(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
	p := plan("prod", sha, 2)
	id, err := f.client.Checks().Propose(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// The first poll sees the run just created: a changed listing, counted.
	if again, err := f.client.Checks().Propose(ctx, p); err != nil || again != id {
		t.Fatalf("Propose again = %d, %v; want the same run %d", again, err, id)
	}
	usedBefore, sentBefore := counted(f)
	for range 5 {
		again, err := f.client.Checks().Propose(ctx, p)
		if err != nil || again != id {
			t.Fatalf("Propose again = %d, %v; want the same run %d", again, err, id)
		}
	}
	used, sent := counted(f)
	if used != usedBefore || sent != sentBefore+5 {
		t.Errorf("5 polls: %d requests counted against the limit, %d sent; want 0 and 5", used-usedBefore, sent-sentBefore)
	}
	if n := countStatus(f, listRuns, http.StatusNotModified); n != 5 {
		t.Errorf("%d listings answered 304, want 5", n)
	}

	// The plan changes (cluster drift): the old run is replaced. The next poll sees the new run, not the copy.
	p2 := plan("prod", sha, 3)
	id2, err := f.client.Checks().Propose(ctx, p2)
	if err != nil || id2 == id {
		t.Fatalf("Propose of a changed plan = %d, %v; want a new run", id2, err)
	}
	again, err := f.client.Checks().Propose(ctx, p2)
	if err != nil || again != id2 {
		t.Fatalf("Propose of the changed plan again = %d, %v; want %d (a stale copy would create a third run)", again, err, id2)
	}
	if n := len(f.srv.Repo(owner, repo).CheckRuns()); n != 2 {
		t.Errorf("%d check runs, want 2", n)
	}
}

// TestLowBudget: with less than 10% of the rate limit left, a poll is answered from the client's copy
// without a request, while a permission check still asks GitHub; the copy is never older than the
// client's last write.
func TestLowBudget(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.srv.Repo(owner, repo).SetPermission("maria", "maintain")
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
	p := plan("prod", sha, 1)
	id, err := f.client.Checks().Propose(ctx, p) // lists, creates the run
	if err != nil {
		t.Fatal(err)
	}
	_, before := counted(f)
	if _, err := f.client.Approvers().MayApprove(ctx, "prod", "maria"); err != nil {
		t.Fatal(err)
	}
	_, after := counted(f)
	checks := after - before

	f.srv.Faults().SetRateLimit(5000, 400) // under 10% left, reported from the next answer on
	if again, err := f.client.Checks().Propose(ctx, p); err != nil || again != id {
		t.Fatalf("first poll after the write = %d, %v; want run %d (a copy from before the write would create another)", again, err, id)
	}
	for range 3 {
		_, sent := counted(f)
		if again, err := f.client.Checks().Propose(ctx, p); err != nil || again != id {
			t.Fatalf("poll with the budget low = %d, %v; want run %d", again, err, id)
		}
		if _, after := counted(f); after != sent {
			t.Errorf("a poll with the budget low sent %d requests, want 0", after-sent)
		}
	}
	_, sent := counted(f)
	if d, err := f.client.Approvers().MayApprove(ctx, "prod", "maria"); err != nil || !d.Allowed {
		t.Fatalf("MayApprove = %+v, %v", d, err)
	}
	if _, after := counted(f); after-sent != checks {
		t.Errorf("a permission check with the budget low sent %d requests, want %d as before (never from a copy)", after-sent, checks)
	}
	if n := len(f.srv.Repo(owner, repo).CheckRuns()); n != 1 {
		t.Errorf("%d check runs, want 1", n)
	}
}

// TestGitHubMetrics: the counter has one series per status code and the gauges follow GitHub's headers.
func TestGitHubMetrics(t *testing.T) {
	f := newFixture(t)
	f.srv.Faults().SetRateLimit(5000, 5000)
	ctx := context.Background()
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
	p := plan("prod", sha, 1)
	for range 3 {
		if _, err := f.client.Checks().Propose(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.client.Collectors()...)
	cs := f.client.Collectors()
	requests := cs[0].(*prometheus.CounterVec)
	// Listing (200), installation token and check run created (201, 201), listing with the new run
	// (200), listing unchanged (304).
	for code, want := range map[string]float64{"200": 2, "201": 2, "304": 1} {
		if got := testutil.ToFloat64(requests.WithLabelValues(code)); got != want {
			t.Errorf("stagehand_github_requests_total{code=%q} = %v, want %v", code, got, want)
		}
	}
	if got, want := testutil.ToFloat64(cs[1]), float64(5000-f.srv.Faults().RateLimitUsed()); got != want {
		t.Errorf("remaining = %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(cs[2]); got != 5000 {
		t.Errorf("limit = %v, want 5000", got)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 5 {
		t.Errorf("gathered %d series (%v), want 5", n, err)
	}
}

func countStatus(f *fixture, route string, status int) int {
	n := 0
	for _, r := range f.srv.Requests() {
		if r.Route == route && r.Status == status {
			n++
		}
	}
	return n
}

// BenchmarkGitHubRequests counts the GitHub requests of the daemon's two GitHub moments: an idle pass
// that proposes a pending plan again (each repropose period) and a promotion (a new commit's plan
// proposed, applied and reported). counted/op is what counts against the rate limit; sent/op every
// request (a 304 is sent but free).
func BenchmarkGitHubRequests(b *testing.B) {
	for _, bc := range []struct {
		name string
		op   func(ctx context.Context, f *fixture, g *github.Gate, i int) error
	}{
		{"idle pass", func(ctx context.Context, f *fixture, g *github.Gate, i int) error {
			_, err := f.client.Checks().Propose(ctx, idlePlan)
			return err
		}},
		{"promotion", func(ctx context.Context, f *fixture, g *github.Gate, i int) error {
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": string(rune('a' + i%26))}, "bump")
			p := plan("prod", sha, 3)
			if _, err := f.client.Checks().Propose(ctx, p); err != nil {
				return err
			}
			if err := f.client.Checks().Applying(ctx, p, "maria"); err != nil {
				return err
			}
			return f.client.Checks().Finished(ctx, &reconcile.Result{Plan: p}, "maria", nil)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixtureWith(b, nil)
			ctx := context.Background()
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
			idlePlan = plan("prod", sha, 3)
			for range 2 { // proposed, then polled once: the steady state of a waiting plan
				if _, err := f.client.Checks().Propose(ctx, idlePlan); err != nil {
					b.Fatal(err)
				}
			}
			used, sent := counted(f)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := bc.op(ctx, f, github.NewGate(f.client), i); err != nil {
					b.Fatal(err)
				}
			}
			u, s := counted(f)
			b.ReportMetric(float64(u-used)/float64(b.N), "counted/op")
			b.ReportMetric(float64(s-sent)/float64(b.N), "sent/op")
		})
	}
}

var idlePlan *reconcile.Plan

// TestWriteKeepsETags: a write elsewhere (a check run on another commit, as a
// PR preview makes) leaves the ETags of the polls, so the next poll of an
// unchanged commit is still a free 304; only answering from the copy without
// asking stops until GitHub confirms it again.
func TestWriteKeepsETags(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": "{}"}, "bump")
	other := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/api.json": `{"a":1}`}, "another")
	p := plan("prod", sha, 2)
	id, err := f.client.Checks().Propose(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Checks().Propose(ctx, p); err != nil { // the listing with the new run: kept with its ETag
		t.Fatal(err)
	}
	if _, err := f.client.Checks().Propose(ctx, plan("staging", other, 1)); err != nil { // a write on another commit
		t.Fatal(err)
	}
	used, _ := counted(f)
	if again, err := f.client.Checks().Propose(ctx, p); err != nil || again != id {
		t.Fatalf("Propose again = %d, %v; want run %d", again, err, id)
	}
	if after, _ := counted(f); after != used {
		t.Errorf("the poll after an unrelated write counted %d requests against the limit, want 0 (a 304)", after-used)
	}
}
