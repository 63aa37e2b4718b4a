package github_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestFlowOutcomeReportedAfterAnOutage: GitHub refuses every retry of the check run's update while an
// approved plan is applied, so the run would stay "in progress" for good. The outcome is kept in the
// state; the daemon restarts while GitHub still refuses (its first report again fails too), and once
// GitHub answers the run ends as success, once: no further update, one run, nothing left to report.
func TestFlowOutcomeReportedAfterAnOutage(t *testing.T) {
	f := newFlow(t)
	f.resync = 200 * time.Millisecond
	// Before the restart: no second attempt (the restart must find the outcome in the state).
	f.opts = []daemon.Option{daemon.WithOutcomeRetry(time.Hour, time.Hour)}
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)

	// Started's update (5 tries), Completed's (5), and the restarted daemon's first report (5).
	f.gh.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: routeCheckRun, Status: http.StatusBadGateway, Times: 15})
	ctx := context.Background()
	if _, err := f.d.Approve(ctx, "prod", run.ExternalID, ghUser("maria")); err != nil {
		t.Fatal(err)
	}
	f.waitImage("1.0.1")
	unreported := func() []state.Unreported {
		st, err := f.d.Store().Load(ctx, "prod")
		if err != nil {
			t.Fatal(err)
		}
		return st.Unreported
	}
	testenv.WaitFor(t, 30*time.Second, "the refused outcome kept in the state", func() bool { return len(unreported()) == 1 })
	if u := unreported()[0]; u.Kind != "completed" || u.Outcome == nil || u.Outcome.Result != "succeeded" || u.Attempts != 1 {
		t.Fatalf("kept %+v, want the succeeded outcome after one attempt", u)
	}
	if got, _ := f.gh.Repo(owner, repo).CheckRun(run.ID); got.Conclusion == "success" {
		t.Fatalf("run concluded while GitHub refused every update: %+v", got)
	}

	f.opts = []daemon.Option{daemon.WithOutcomeRetry(100*time.Millisecond, time.Second)}
	f.restart()
	f.waitRunID(run.ID, "success", concluded("success"))
	if n := f.gh.Faults().Left(); n != 0 {
		t.Errorf("%d injected faults never reached: the restarted daemon did not try while GitHub refused", n)
	}
	testenv.WaitFor(t, 30*time.Second, "nothing left to report", func() bool { return len(unreported()) == 0 })

	patches := f.gh.CountRequests("PATCH", routeCheckRun)
	f.waitPasses(2) // (and the state holds nothing to report any more: no later look reports it again)
	if got := f.gh.CountRequests("PATCH", routeCheckRun); got != patches {
		t.Errorf("the outcome was reported again after GitHub took it: %d updates, then %d", patches, got)
	}
	var runs int
	for _, r := range f.gh.Repo(owner, repo).CheckRuns() {
		if r.HeadSHA == sha && r.Name == "stagehand/prod" {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("%d check runs on %s, want 1", runs, sha[:7])
	}
	if h := f.history(); len(h) != 1 || h[0].Result != "succeeded" {
		t.Errorf("history %+v, want one success", h)
	}
}

// TestFlowOutcomeReportedByTheNextLeader: the leader keeps an outcome GitHub refused, then stops; the
// other replica, leading next, reports it from the state: the run ends as success, once.
func TestFlowOutcomeReportedByTheNextLeader(t *testing.T) {
	f := newFlow(t)
	f.resync = 200 * time.Millisecond
	f.opts = []daemon.Option{daemon.WithOutcomeRetry(time.Hour, time.Hour)} // the first leader tries once only
	sha := f.commit("1.0.1")
	le := daemon.LeaderElection{Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond}
	a := f.startReplica(le)
	f.d = a.d
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)

	// Started's update and Completed's, each refused on all 5 tries.
	f.gh.Faults().Inject(githubtest.Fault{Method: "PATCH", Route: routeCheckRun, Status: http.StatusBadGateway, Times: 10})
	ctx := context.Background()
	if _, err := a.d.Approve(ctx, "prod", run.ExternalID, ghUser("maria")); err != nil {
		t.Fatal(err)
	}
	f.waitImage("1.0.1")
	testenv.WaitFor(t, 30*time.Second, "the refused outcome kept in the state", func() bool {
		st, err := a.d.Store().Load(ctx, "prod")
		return err == nil && len(st.Unreported) == 1
	})

	f.opts = []daemon.Option{daemon.WithOutcomeRetry(100*time.Millisecond, time.Second)}
	b := f.startReplica(le)
	if b.d.Leading() {
		t.Fatal("the second replica leads while the first does")
	}
	a.stop()
	f.d = b.d
	f.waitRunID(run.ID, "success", concluded("success"))
	testenv.WaitFor(t, 30*time.Second, "nothing left to report", func() bool {
		st, err := b.d.Store().Load(ctx, "prod")
		return err == nil && len(st.Unreported) == 0
	})
	if n := f.gh.Faults().Left(); n != 0 {
		t.Errorf("%d injected faults never reached", n)
	}
	var runs int
	for _, r := range f.gh.Repo(owner, repo).CheckRuns() {
		if r.HeadSHA == sha && r.Name == "stagehand/prod" {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("%d check runs on %s, want 1", runs, sha[:7])
	}
}

// ghUser is the principal of the GitHub user login.
func ghUser(login string) identity.Principal {
	return identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: login}}
}
