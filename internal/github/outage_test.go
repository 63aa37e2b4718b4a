package github_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

const (
	routeCheckRuns    = "/repos/{owner}/{repo}/check-runs"
	routeCheckRun     = "/repos/{owner}/{repo}/check-runs/{check_run_id}"
	routeRefCheckRuns = "/repos/{owner}/{repo}/commits/{ref}/check-runs"
)

// passes counts the daemon's finished passes over prod (from its reconcile duration histogram).
func (f *flow) passes() uint64 {
	f.t.Helper()
	return testenv.Observations(f.t, f.d.Metrics().Registry, testenv.Series{Name: "stagehand_reconcile_duration_seconds", Label: "environment", Value: "prod"})
}

// waitPasses waits until the daemon has finished n more passes over prod.
func (f *flow) waitPasses(n uint64) {
	f.t.Helper()
	want := f.passes() + n
	deadline := time.Now().Add(30 * time.Second)
	for f.passes() < want {
		if time.Now().After(deadline) {
			f.t.Fatalf("daemon did not finish %d more passes within 30s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFlowProposeAfterAnOutage: GitHub fails every retry of creating the check run, so the plan is pending
// in the store without a run; a later pass proposes it again and the run appears, and further passes
// write nothing more to GitHub (Propose is remembered once accepted).
func TestFlowProposeAfterAnOutage(t *testing.T) {
	f := newFlow(t)
	f.resync = 200 * time.Millisecond
	sha := f.commit("1.0.1")
	// The client tries 5 times: the first Propose fails as a whole.
	f.gh.Faults().Inject(githubtest.Fault{Method: "POST", Route: routeCheckRuns, Status: http.StatusBadGateway, Times: 5})
	f.start()
	run := f.waitRun(sha, "awaiting approval after the outage", awaitingApproval)
	if n := f.gh.Faults().Left(); n != 0 {
		t.Fatalf("%d injected faults never reached", n)
	}
	if n := len(f.gh.Repo(owner, repo).CheckRuns()); n != 1 {
		t.Errorf("%d check runs, want 1", n)
	}

	writes := func() [3]int {
		return [3]int{f.gh.CountRequests("POST", routeCheckRuns), f.gh.CountRequests("PATCH", routeCheckRun),
			f.gh.CountRequests("GET", routeRefCheckRuns)}
	}
	before := writes()
	f.waitPasses(3)
	if after := writes(); after != before {
		t.Errorf("passes over an accepted pending plan called GitHub: [POST PATCH GET] %v → %v", before, after)
	}

	// A new process proposes the pending plan once (idempotently: the run is kept) and then stays quiet.
	f.restart()
	f.waitPasses(3)
	if n := len(f.gh.Repo(owner, repo).CheckRuns()); n != 1 {
		t.Errorf("after a restart: %d check runs, want the one proposed before", n)
	}
	if got := f.gh.CountRequests("POST", routeCheckRuns) + f.gh.CountRequests("PATCH", routeCheckRun); got != before[0]+before[1] {
		t.Errorf("a restart wrote to GitHub: %d POST+PATCH, want %d", got, before[0]+before[1])
	}
	if got, _ := f.gh.Repo(owner, repo).CheckRun(run.ID); !awaitingApproval(got) {
		t.Errorf("run after the restart: %+v", got)
	}
}
