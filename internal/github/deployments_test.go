package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

var deploymentsConfig = config.GitHubDeployments{Enabled: true, EnvironmentURL: "https://{env}.acme.example",
	LogURL: "https://stagehand.example.com/api/v1/environments/{env}?revision={revision}"}

// deployPayload is the payload as the deployments gate writes it.
type deployPayload struct {
	PlanHash string             `json:"planHash"`
	Approver string             `json:"approver"`
	Changes  []reconcile.Change `json:"changes"`
	Omitted  int                `json:"omitted"`
	Note     string             `json:"note"`
}

func states(d githubtest.Deployment) []string {
	var out []string
	for _, s := range d.Statuses {
		out = append(out, s.State)
	}
	return out
}

// waitDeployments waits until the repository has n deployments, the newest ending in state.
func (f *flow) waitDeployments(n int, state string) []githubtest.Deployment {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var ds []githubtest.Deployment
	for time.Now().Before(deadline) {
		ds = f.gh.Repo(owner, repo).Deployments()
		if len(ds) == n && ds[n-1].State() == state {
			return ds
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("want %d deployments, the newest %s; have %+v", n, state, ds)
	return nil
}

// TestFlowDeployments: an approved apply in a manual environment is one GitHub deployment of the applied
// commit to the environment, carrying the plan, with statuses queued, in_progress, success; the next apply
// makes it inactive.
func TestFlowDeployments(t *testing.T) {
	f := newFlow(t)
	f.cfg.GitHub.Deployments = deploymentsConfig
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitImage("1.0.1")
	ds := f.waitDeployments(1, "success")
	d := ds[0]
	if d.SHA != sha || d.Ref != sha || d.Environment != "prod" || d.Task != "deploy" || d.Production || d.Transient {
		t.Errorf("deployment = %+v; want ref and sha %s, environment prod, task deploy", d, sha)
	}
	if diff := cmp.Diff([]string{"queued", "in_progress", "success"}, states(d)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	for _, s := range d.Statuses {
		if s.EnvironmentURL != "https://prod.acme.example" || s.LogURL != "https://stagehand.example.com/api/v1/environments/prod?revision="+sha {
			t.Errorf("status %s: environment_url %q log_url %q", s.State, s.EnvironmentURL, s.LogURL)
		}
	}
	if !strings.Contains(d.Statuses[0].Description, "@maria") {
		t.Errorf("queued description %q does not name the approver", d.Statuses[0].Description)
	}
	var pl deployPayload
	if err := json.Unmarshal(d.Payload, &pl); err != nil {
		t.Fatalf("payload %s: %v", d.Payload, err)
	}
	h := f.history()
	if len(h) != 1 || pl.PlanHash != h[0].PlanHash || pl.Approver != "github:maria" || len(pl.Changes) != 1 ||
		!strings.Contains(pl.Changes[0].To, ":1.0.1@sha256:") || pl.Omitted != 0 {
		t.Errorf("payload = %+v; history %+v", pl, h)
	}

	newer := f.commit("1.0.2")
	f.trigger()
	run = f.waitRun(newer, "awaiting approval", awaitingApproval)
	f.click(run.ID, "approve", "maria", secret)
	ds = f.waitDeployments(2, "success")
	if ds[1].SHA != newer {
		t.Errorf("second deployment on %s, want %s", ds[1].SHA, newer)
	}
	if diff := cmp.Diff([]string{"queued", "in_progress", "success", "inactive"}, states(ds[0])); diff != "" {
		t.Errorf("first deployment after the second apply (-want +got):\n%s", diff)
	}
}

// TestFlowDeploymentsFailedRollout: the deployment is in progress while the rollout is awaited, and ends
// in failure when the rollout fails (here: it never finishes within the rollout timeout).
func TestFlowDeploymentsFailedRollout(t *testing.T) {
	f := newFlow(t)
	f.cfg.GitHub.Deployments = deploymentsConfig
	f.rolloutTimeout = 2 * time.Second
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.click(run.ID, "approve", "maria", secret)
	f.waitImage("1.0.1") // patched; the rollout is awaited now
	f.waitDeployments(1, "in_progress")
	d := f.waitDeployments(1, "failure")[0]
	if diff := cmp.Diff([]string{"queued", "in_progress", "failure"}, states(d)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	h := f.history()
	if len(h) != 1 || h[0].Result != approval.ResultFailed {
		t.Fatalf("history = %+v, want one failure", h)
	}
	if last := d.Statuses[2].Description; last == "" || !strings.HasPrefix(h[0].Message, strings.TrimSuffix(last, "…")) {
		t.Errorf("failure description %q, want the start of the history's message %q", last, h[0].Message)
	}
}

// TestFlowDeploymentsSkipConfirmation: an environment that applies without approval shows its deploys too.
func TestFlowDeploymentsSkipConfirmation(t *testing.T) {
	f := newFlow(t)
	f.cfg.GitHub.Deployments = deploymentsConfig
	files := map[string]string{"environments/prod/manifest.json": `{"skipConfirmation": true, "services": [{"name": "api", "containers": [{"dockerTag": "1.0.1"}]}]}`}
	sha := f.git.Repo("manifests").Commit(t, "main", files, "api 1.0.1, no approval")
	f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, "api 1.0.1, no approval")
	f.start()
	f.waitImage("1.0.1")
	d := f.waitDeployments(1, "success")[0]
	if d.SHA != sha || d.Environment != "prod" {
		t.Errorf("deployment = %+v", d)
	}
	if diff := cmp.Diff([]string{"queued", "in_progress", "success"}, states(d)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if !strings.Contains(d.Statuses[0].Description, "skipConfirmation") {
		t.Errorf("queued description %q", d.Statuses[0].Description)
	}
}

// TestFlowDeploymentsGitHubDown: GitHub failing the deployment does not fail the apply; when only the
// start could not be recorded, the end records the whole sequence.
func TestFlowDeploymentsGitHubDown(t *testing.T) {
	f := newFlow(t)
	f.cfg.GitHub.Deployments = deploymentsConfig
	sha := f.commit("1.0.1")
	const route = "/repos/{owner}/{repo}/deployments"
	// Down for both the start and the end of the apply: every attempt of both (5 each) answers 500.
	f.gh.Faults().Inject(githubtest.Fault{Method: "POST", Route: route, Status: http.StatusInternalServerError, Times: 10})
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.click(run.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
	deadline := time.Now().Add(10 * time.Second)
	for f.gateFailures() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := f.gateFailures(); n != 2 {
		t.Errorf("stagehand_failures_total{stage=gate} = %v, want 2 (start and end)", n)
	}
	if n := f.gh.Faults().Left(); n != 0 {
		t.Errorf("%d faults never reached", n)
	}
	if h := f.history(); len(h) != 1 || h[0].Result != approval.ResultSucceeded {
		t.Errorf("history = %+v, want one success despite GitHub's 500s", h)
	}
	if ds := f.gh.Repo(owner, repo).Deployments(); len(ds) != 0 {
		t.Errorf("deployments = %+v, want none", ds)
	}

	// Down only when the apply starts (its 5 attempts): the end creates the deployment with all its statuses.
	f.gh.Faults().Inject(githubtest.Fault{Method: "POST", Route: route, Status: http.StatusInternalServerError, Times: 5})
	newer := f.commit("1.0.2")
	f.trigger()
	run = f.waitRun(newer, "awaiting approval", awaitingApproval)
	f.click(run.ID, "approve", "maria", secret)
	d := f.waitDeployments(1, "success")[0]
	if d.SHA != newer {
		t.Errorf("deployment on %s, want %s", d.SHA, newer)
	}
	if diff := cmp.Diff([]string{"queued", "in_progress", "success"}, states(d)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if n := f.gateFailures(); n != 3 {
		t.Errorf("stagehand_failures_total{stage=gate} = %v, want 3", n)
	}
}

// TestDeploymentsOutcomes: each way an apply ends, as the worker reports it through Completed.
func TestDeploymentsOutcomes(t *testing.T) {
	long := strings.Repeat("rollout of Deployment/api timed out; ", 10)
	for _, tc := range []struct {
		name    string
		outcome approval.Outcome
		states  []string
		last    string // the final status's description
	}{
		{"succeeded", approval.Outcome{Result: approval.ResultSucceeded, Approver: "maria"},
			[]string{"queued", "in_progress", "success"}, "Applied and rolled out"},
		{"failed", approval.Outcome{Result: approval.ResultFailed, Approver: "maria", Message: "Deployment/api: rollout failed"},
			[]string{"queued", "in_progress", "failure"}, "Deployment/api: rollout failed"},
		{"failed at length", approval.Outcome{Result: approval.ResultFailed, Approver: "maria", Message: long},
			[]string{"queued", "in_progress", "failure"}, string([]rune(long)[:139]) + "…"},
		{"interrupted", approval.Outcome{Result: approval.ResultInterrupted, Approver: approval.AutoApprover, Message: "shut down during the apply"},
			[]string{"queued", "in_progress", "error"}, "shut down during the apply"},
		{"rejected", approval.Outcome{Result: approval.ResultRejected, Approver: "maria"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/manifest.json": "{}"}, "bump")
			g := github.NewDeployments(f.client, config.GitHubDeployments{Enabled: true})
			p := plan("prod", sha, 2)
			prop := approval.Proposal{Environment: "prod", Revision: sha, Plan: p}
			if dec, err := g.Propose(ctx, prop); err != nil || dec.Approved {
				t.Fatalf("Propose = %+v, %v; want no decision", dec, err)
			}
			if err := g.Completed(ctx, prop, tc.outcome); err != nil {
				t.Fatalf("Completed: %v", err)
			}
			ds := f.srv.Repo(owner, repo).Deployments()
			if tc.states == nil {
				if len(ds) != 0 {
					t.Errorf("deployments for a rejected plan: %+v", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("%d deployments, want 1", len(ds))
			}
			if diff := cmp.Diff(tc.states, states(ds[0])); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if got := ds[0].Statuses[2].Description; got != tc.last {
				t.Errorf("final description %q, want %q", got, tc.last)
			}
			if ds[0].Statuses[2].LogURL != "" || ds[0].Statuses[2].EnvironmentURL != "" {
				t.Errorf("URLs set without templates: %+v", ds[0].Statuses[2])
			}
		})
	}
}

// TestDeploymentsReleaseWait: while a plan applied and verified waits for its release approval, its
// deployment says so (still in_progress: it is not released), once however often the wait is shown again, and
// ends as the release decides.
func TestDeploymentsReleaseWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome approval.Outcome
		final   string
	}{
		{"released", approval.Outcome{Result: approval.ResultSucceeded, Approver: approval.AutoApprover, Sequence: "pass"}, "success"},
		{"rejected and rolled back", approval.Outcome{Result: approval.ResultRolledBack, Approver: approval.AutoApprover,
			Message: "release rejected by maria; rolled back 2 workload(s) to the images before"}, "failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/manifest.json": "{}"}, "bump")
			g := github.NewDeployments(f.client, config.GitHubDeployments{Enabled: true})
			prop := approval.Proposal{Environment: "devel", Revision: sha, Plan: plan("devel", sha, 2)}
			if err := g.Started(ctx, prop, approval.AutoApprover); err != nil {
				t.Fatal(err)
			}
			release := prop
			release.Release = time.Now()
			for range 3 { // shown again: after a restart, every repropose period
				if dec, err := g.Propose(ctx, release); err != nil || dec.Approved {
					t.Fatalf("Propose(release) = %+v, %v; want no decision", dec, err)
				}
			}
			ds := f.srv.Repo(owner, repo).Deployments()
			if len(ds) != 1 {
				t.Fatalf("%d deployments, want 1", len(ds))
			}
			if diff := cmp.Diff([]string{"queued", "in_progress", "in_progress"}, states(ds[0])); diff != "" {
				t.Errorf("statuses while waiting (-want +got):\n%s", diff)
			}
			if got, want := ds[0].Statuses[2].Description, "Deployed and verified; waiting for the release approval"; got != want {
				t.Errorf("waiting status says %q, want %q", got, want)
			}
			if err := g.Completed(ctx, prop, tc.outcome); err != nil {
				t.Fatal(err)
			}
			if ds = f.srv.Repo(owner, repo).Deployments(); len(ds) != 1 || ds[0].State() != tc.final {
				t.Errorf("deployments %+v, want one ending %s", ds, tc.final)
			}
		})
	}
}

// TestDeploymentsPayloadTrimmed: a plan too large for a deployment payload is cut, with a note saying so.
func TestDeploymentsPayloadTrimmed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/manifest.json": "{}"}, "bump")
	p := plan("prod", sha, 1000)
	g := github.NewDeployments(f.client, config.GitHubDeployments{Enabled: true})
	if err := g.Completed(ctx, approval.Proposal{Environment: "prod", Revision: sha, Plan: p},
		approval.Outcome{Result: approval.ResultSucceeded, Approver: "maria"}); err != nil {
		t.Fatal(err)
	}
	ds := f.srv.Repo(owner, repo).Deployments()
	if len(ds) != 1 {
		t.Fatalf("%d deployments", len(ds))
	}
	if len(ds[0].Payload) > github.MaxPayloadBytes {
		t.Errorf("payload is %d bytes, over %d", len(ds[0].Payload), github.MaxPayloadBytes)
	}
	var pl deployPayload
	if err := json.Unmarshal(ds[0].Payload, &pl); err != nil {
		t.Fatal(err)
	}
	if len(pl.Changes) == 0 || len(pl.Changes)+pl.Omitted != 1000 || !strings.Contains(pl.Note, "of 1000 changes omitted") ||
		pl.PlanHash != p.PlanHash || pl.Changes[0] != p.Changes[0] {
		t.Errorf("payload: %d changes, %d omitted, note %q, planHash %s", len(pl.Changes), pl.Omitted, pl.Note, pl.PlanHash)
	}
}

// gateFailures is stagehand_failures_total{environment="prod",stage="gate"}.
func (f *flow) gateFailures() float64 {
	f.t.Helper()
	mfs, err := f.d.Metrics().Registry.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "stagehand_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["environment"] == "prod" && labels["stage"] == "gate" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestDeploymentsStarted: the deployment shows in progress while the apply runs; Completed finishes that
// one (found on GitHub, so a restarted process finds it too), and a second Started for the same plan (a
// process continuing the apply) does not open another.
func TestDeploymentsStarted(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"environments/prod/manifest.json": "{}"}, "bump")
	p := plan("prod", sha, 2)
	prop := approval.Proposal{Environment: "prod", Revision: sha, Plan: p}
	// An older plan of the same commit, finished: not the one to complete.
	g := github.NewDeployments(f.client, deploymentsConfig)
	older := plan("prod", sha, 1)
	if err := g.Completed(ctx, approval.Proposal{Environment: "prod", Revision: sha, Plan: older},
		approval.Outcome{Result: approval.ResultFailed, Approver: "maria", Message: "rollout failed"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Started(ctx, prop, "maria"); err != nil {
		t.Fatalf("Started: %v", err)
	}
	ds := f.srv.Repo(owner, repo).Deployments()
	if len(ds) != 2 || ds[1].State() != "in_progress" {
		t.Fatalf("after Started: %+v, want a second deployment in progress", ds)
	}
	again := github.NewDeployments(f.client, deploymentsConfig) // another process
	if err := again.Started(ctx, prop, "maria"); err != nil {
		t.Fatalf("Started again: %v", err)
	}
	if err := again.Completed(ctx, prop, approval.Outcome{Result: approval.ResultSucceeded, Approver: "maria"}); err != nil {
		t.Fatalf("Completed: %v", err)
	}
	ds = f.srv.Repo(owner, repo).Deployments()
	if len(ds) != 2 {
		t.Fatalf("%d deployments, want 2", len(ds))
	}
	if diff := cmp.Diff([]string{"queued", "in_progress", "failure"}, states(ds[0])); diff != "" {
		t.Errorf("older plan's deployment (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"queued", "in_progress", "success"}, states(ds[1])); diff != "" {
		t.Errorf("deployment (-want +got):\n%s", diff)
	}
}
