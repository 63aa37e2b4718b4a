package keyless

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
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

const (
	owner = "acme"
	repo  = "manifests"
)

// checkoutFile and checkoutJSON are an owned file as internal/prbot's tests
// have it.
const checkoutFile = "environments/devel/checkout-api.json"

// checkoutJSON is an owned file with two services and unusual-but-valid
// formatting (two-space indent, inline container) the editor must keep.
const checkoutJSON = `{
  "services": [
    {
      "name": "checkout-api",
      "version": "1.5.0",
      "containers": [
        { "dockerTag": "1.5.0" },
        {
          "dockerName": "checkout-worker",
          "dockerTag": "1.5.0"
        }
      ]
    },
    {
      "name": "checkout-cron",
      "containers": [{"dockerTag": "0.3.0"}]
    }
  ]
}
`

// clock is the real time plus an offset tests move forward.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// fixture is a manifests repository on the GitHub test server and a bot for
// it (as internal/prbot's tests have it).
type fixture struct {
	srv   *githubtest.Server
	sent  *counter // requests the bots sent, counted on the client side
	gh    *github.Client
	locks *lock.Service
	lockC prbot.LockChecker
}

func newFixture(t testing.TB, files map[string]string) *fixture {
	t.Helper()
	srv := githubtest.New(t)
	srv.CreateRepo(owner, repo, "main")
	if len(files) > 0 {
		srv.Commit(owner, repo, "main", files, "seed")
	}
	sent := &counter{base: srv.Client().Transport}
	gh, err := github.NewClient(&http.Client{Transport: sent}).WithAuthToken(srv.Token()).WithEnterpriseURLs(srv.URL(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	h, err := lockapi.NewHandler(svc, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	ls := httptest.NewServer(h)
	t.Cleanup(ls.Close)
	lc, err := lockapi.NewClient(ls.URL, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, sent: sent, gh: gh, locks: svc, lockC: prbot.LockClient(lc, nil)}
}

// counter counts requests by method and a route suffix pattern as they are
// sent (the server records requests only after answering them).
type counter struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

// count returns how many requests of method had a path matching re.
func (c *counter) count(method, re string) int {
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

func (f *fixture) bot(t testing.TB, opts ...prbot.Option) *prbot.Bot {
	t.Helper()
	opts = append([]prbot.Option{prbot.WithLocks(f.lockC), prbot.WithPollInterval(10 * time.Millisecond)}, opts...)
	b, err := prbot.New(f.gh, owner, repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fixture) lock(t *testing.T, path string) {
	t.Helper()
	if _, err := f.locks.Lock(context.Background(), lock.Lock{Path: path, Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) unlock(t *testing.T, path string) {
	t.Helper()
	if _, err := f.locks.Unlock(context.Background(), path, lock.Incident, false); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) openPulls() []githubtest.PullRequest {
	var out []githubtest.PullRequest
	for _, p := range f.srv.PullRequests(owner, repo) {
		if p.State == "open" {
			out = append(out, p)
		}
	}
	return out
}

func (f *fixture) file(t *testing.T, ref, path string) string {
	t.Helper()
	s, ok := f.srv.File(owner, repo, ref, path)
	if !ok {
		t.Fatalf("no %s at %s", path, ref)
	}
	return s
}
