package github_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

const (
	owner = "acme"
	repo  = "manifests"
)

// fixture is a githubtest server with the manifests repository and a client authenticated as the App.
type fixture struct {
	srv    *githubtest.Server
	client *github.Client
	cfg    config.GitHub
}

func newFixture(t *testing.T, mutate ...func(*config.GitHub)) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, mutate...)
}

func newFixtureWith(t testing.TB, opts []githubtest.Option, mutate ...func(*config.GitHub)) *fixture {
	t.Helper()
	srv := githubtest.New(t, opts...)
	srv.CreateRepo(owner, repo, "main")
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, srv.App().PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.GitHub{
		APIURL: srv.URL(), Owner: owner, Repo: repo, DetailsURL: "https://stagehand.example.com",
		App:       &config.GitHubApp{AppID: srv.App().ID(), InstallationID: srv.App().InstallationID(), PrivateKeyFile: key},
		Approvers: config.Approvers{MinPermission: "maintain", Teams: []string{"acme/sre"}},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := github.New(cfg, github.WithRetry(github.RetryPolicy{MaxAttempts: 4, BaseDelay: 10 * time.Millisecond, MaxWait: 3 * time.Second}))
	if err != nil {
		t.Fatalf("github.New: %v", err)
	}
	return &fixture{srv: srv, client: c, cfg: cfg}
}

// plan builds a plan for env at revision with n changes in target "a".
func plan(env, revision string, n int) *reconcile.Plan {
	p := &reconcile.Plan{Environment: env, Revision: revision, Blocked: []reconcile.Blocked{}, Problems: []reconcile.Problem{}, Unmanaged: []reconcile.Unmanaged{}}
	for i := range n {
		svc := fmt.Sprintf("svc-%03d", i)
		p.Changes = append(p.Changes, reconcile.Change{
			Service: svc, Target: "a", Namespace: "apps-" + env, Kind: reconcile.KindDeployment, Name: svc, Container: svc,
			From: "registry.example.com/team/" + svc + ":1.0.0",
			To:   "registry.example.com/team/" + svc + ":1.0.1@sha256:" + strings.Repeat(fmt.Sprintf("%x", i%16), 64),
		})
	}
	p.PlanHash = reconcile.Hash(p.Environment, p.Revision, p.Changes)
	return p
}

// decider is a hand-written approval.Decider: it records decisions and answers like the daemon would for
// one pending plan per environment; like the daemon, it reports a rejection through its gate (when set and
// the plan was given with setPlan), the only place a rejection reaches the check run.
type decider struct {
	mu       sync.Mutex
	pending  map[string]string // env → planHash
	plans    map[string]*reconcile.Plan
	gate     approval.Gate
	approved []string // "env planHash approver"
	rejected []string
}

func newDecider() *decider {
	return &decider{pending: map[string]string{}, plans: map[string]*reconcile.Plan{}}
}

func (d *decider) set(env, hash string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending[env] = hash
}

// setPlan makes p pending in its environment.
func (d *decider) setPlan(p *reconcile.Plan) {
	d.set(p.Environment, p.PlanHash)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.plans[p.Environment] = p
}

func (d *decider) check(env, hash string) error {
	if d.pending[env] != hash {
		return fmt.Errorf("%w: %s has %q pending, not %q", approval.ErrNotPending, env, d.pending[env], hash)
	}
	return nil
}

func (d *decider) Approve(_ context.Context, env, hash string, who identity.Principal) (*approval.Pending, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(env, hash); err != nil {
		return nil, err
	}
	delete(d.pending, env)
	d.approved = append(d.approved, env+" "+hash+" "+who.String())
	return &approval.Pending{PlanHash: hash}, nil
}

func (d *decider) Reject(ctx context.Context, env, hash string, why approval.Why) (*approval.Pending, error) {
	who, reason := why.By, why.Reason
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(env, hash); err != nil {
		return nil, err
	}
	delete(d.pending, env)
	d.rejected = append(d.rejected, env+" "+hash+" "+who.String())
	if p := d.plans[env]; d.gate != nil && p != nil && p.PlanHash == hash {
		prop := approval.Proposal{Environment: env, Revision: p.Revision, Plan: p}
		if err := d.gate.Completed(ctx, prop, approval.Outcome{Result: approval.ResultRejected, Approver: who.ID.String(), Message: reason}); err != nil {
			return nil, err
		}
	}
	return &approval.Pending{PlanHash: hash}, nil
}

// newHandler is github.NewHandler, failing the test on a configuration error.
func newHandler(t *testing.T, c *github.Client, d approval.Decider, p github.Previewer, opts ...github.Option) *github.Handler {
	t.Helper()
	h, err := github.NewHandler(c, d, "main", append(opts, github.WithPreviewer(p))...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func githubtestRun(name, sha string) githubtest.CheckRun {
	return githubtest.CheckRun{Name: name, HeadSHA: sha, Conclusion: "action_required", ExternalID: "x"}
}
