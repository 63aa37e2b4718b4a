// Package prbottest is the world prbot's tests run in: a manifests
// repository on githubtest's GitHub, a go-github client that counts what it
// sends, and a lock service behind pkg/lock/lockapi's REST API. It imports
// nothing of internal/prbot, so that prbot's own tests use it as well as the
// tests of the doors in front of the bot (internal/keyless) and of prbot
// serve's promoter (internal/prbot/promoter).
package prbottest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// The manifests repository of a Fixture: Owner/Repo, base branch main.
const (
	Owner = "acme"
	Repo  = "manifests"
)

// LockToken is the bearer token of a Fixture's lock API.
const LockToken = "lock-token"

// Fixture is a manifests repository on the GitHub test server, a client
// for it and a lock service.
type Fixture struct {
	Srv        *githubtest.Server
	Sent       *Counter // requests the bots sent, counted on the client side
	GH         *github.Client
	Locks      *lock.Service
	LockClient *lockapi.Client // Locks over the REST API
}

// New starts the GitHub test server with Owner/Repo holding files (paths
// from the repository's top) committed on main, and a lock service in
// memory behind its REST API; both end with t.
func New(t testing.TB, files map[string]string) *Fixture {
	t.Helper()
	srv := githubtest.New(t)
	srv.CreateRepo(Owner, Repo, "main")
	if len(files) > 0 {
		srv.Repo(Owner, Repo).Commit("main", files, "seed")
	}
	sent := &Counter{base: srv.Client().Transport}
	gh, err := github.NewClient(&http.Client{Transport: sent}).WithAuthToken(srv.Token()).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	h, err := lockapi.NewHandler(svc, LockToken)
	if err != nil {
		t.Fatal(err)
	}
	ls := httptest.NewServer(h)
	t.Cleanup(ls.Close)
	lc, err := lockapi.NewClient(ls.URL, LockToken)
	if err != nil {
		t.Fatal(err)
	}
	return &Fixture{Srv: srv, Sent: sent, GH: gh, Locks: svc, LockClient: lc}
}

// Counter counts requests by method and a route suffix pattern as they are
// sent (the server records requests only after answering them).
type Counter struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

// RoundTrip records r and sends it.
func (c *Counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

// Count returns how many requests of method had a path matching re.
func (c *Counter) Count(method, re string) int {
	rx := regexp.MustCompile(re)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.reqs {
		m, p, _ := strings.Cut(r, " ")
		if m == method && rx.MatchString(p) {
			n++
		}
	}
	return n
}

// Lock takes an incident lock at path for an hour.
func (f *Fixture) Lock(t *testing.T, path string) {
	t.Helper()
	if _, err := f.Locks.Lock(context.Background(), lock.Lock{Path: path, Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// Unlock removes the incident lock at path.
func (f *Fixture) Unlock(t *testing.T, path string) {
	t.Helper()
	if _, err := f.Locks.Unlock(context.Background(), path, lock.Incident, false); err != nil {
		t.Fatal(err)
	}
}

// OpenPulls returns the repository's open pull requests.
func (f *Fixture) OpenPulls() []githubtest.PullRequest {
	var out []githubtest.PullRequest
	for _, p := range f.Srv.Repo(Owner, Repo).PullRequests() {
		if p.State == "open" {
			out = append(out, p)
		}
	}
	return out
}

// File returns path at ref, failing t when there is none.
func (f *Fixture) File(t *testing.T, ref, path string) string {
	t.Helper()
	s, ok := f.Srv.Repo(Owner, Repo).File(ref, path)
	if !ok {
		t.Fatalf("no %s at %s", path, ref)
	}
	return s
}

// HealthyPipeline is a pipeline.yaml promoting devel into staging, under
// the lock path apps/staging.
const HealthyPipeline = "stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    lockPath: apps/staging\n"

// Spread is a repository whose services live in several files per stage
// (devel and staging), with pipeline as its pipeline.yaml.
func Spread(pipeline string) map[string]string {
	return map[string]string{
		"pipeline.yaml":                    pipeline,
		"environments/devel/manifest.json": `{"includes": ["checkout-api.json", "payments-api.json", "search.json"]}` + "\n",
		"environments/devel/checkout-api.json": `{
    "services": [
        {"name": "checkout-api", "containers": [{"dockerTag": "1.5.0"}, {"dockerName": "checkout-worker", "dockerTag": "1.5.0"}]}
    ]
}
`,
		"environments/devel/payments-api.json": `{
    "services": [
        {"name": "payments-api", "containers": [{"dockerTag": "2.4.0"}]}
    ]
}
`,
		"environments/devel/search.json":     `{"services": [{"name": "search", "containers": [{"dockerTag": "0.1.0"}]}]}` + "\n",
		"environments/staging/manifest.json": `{"includes": ["checkout-api.json", "payments-api.json"]}` + "\n",
		"environments/staging/checkout-api.json": `{
    "services": [
        {"name": "checkout-api", "containers": [{"dockerTag": "1.4.0"}, {"dockerName": "checkout-worker", "dockerTag": "1.4.0"}]}
    ]
}
`,
		"environments/staging/payments-api.json": `{
    "services": [
        {"name": "payments-api", "containers": [{"dockerTag": "2.3.0"}]}
    ]
}
`,
	}
}

// Healthy records a successful stagehand/<env> check run on sha, completed
// at completed after a minute's run.
func (f *Fixture) Healthy(env, sha string, completed time.Time) {
	f.Srv.Repo(Owner, Repo).AddCheckRun(githubtest.CheckRun{Name: promote.CheckName(env), HeadSHA: sha, Status: "completed", Conclusion: "success",
		StartedAt: completed.Add(-time.Minute), CompletedAt: completed})
}
