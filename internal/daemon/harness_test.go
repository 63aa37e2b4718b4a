package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

const (
	testToken  = "test-api-token-0001" // "ops": every scope
	testSecret = "test-webhook-secret"
	imageRepo  = "registry.example.com/acme/"
)

// people are the approvers of the tests, each with a named token (tokenOf).
var people = []string{"alice", "bob", "carol", "erin", "bench"}

// tokenOf is the API token of one of people: who approves is who the token is.
func tokenOf(name string) string { return "person-token-" + name }

func testTokens() []auth.Token {
	ts := []auth.Token{{Name: "ops", Token: testToken, Scopes: []string{"read", "lock:admin", "approve:*"}}}
	for _, p := range people {
		// Each acts for the person of its name, so it counts where automation may not approve (approvals.required > 1,
		// forbidAuthors).
		ts = append(ts, auth.Token{Name: p, Token: tokenOf(p), Scopes: []string{"read", "lock", "approve:*"}, ActsFor: "github:" + p})
	}
	return ts
}

// peoplePolicy is the GitHub approver policy of the tests: the people may approve everywhere, nobody else.
type peoplePolicy struct{}

func (peoplePolicy) MayApprove(_ context.Context, env, login string) (bool, string, error) {
	if slices.Contains(people, strings.ToLower(login)) {
		return true, "one of the tests' approvers", nil
	}
	return false, "@" + login + " is not one of the tests' approvers of " + env, nil
}

// harness is one test's world: a git server with a manifests repository,
// a state namespace and one target namespace per environment, each with a
// Deployment per service.
type harness struct {
	t       testing.TB
	git     *gitserver.Server
	url     string
	stateNS string
	ns      map[string]string // environment → target namespace
	cfg     *config.Config
	// apiOpts are added to the API's options (start).
	apiOpts []api.Option
}

func manifestJSON(skip bool, services map[string]string) string {
	type container struct {
		DockerTag string `json:"dockerTag"`
	}
	type service struct {
		Name       string      `json:"name"`
		Containers []container `json:"containers"`
	}
	m := struct {
		SkipConfirmation bool      `json:"skipConfirmation,omitempty"`
		Services         []service `json:"services"`
	}{SkipConfirmation: skip}
	for _, name := range sortedKeys(services) {
		m.Services = append(m.Services, service{Name: name, Containers: []container{{DockerTag: services[name]}}})
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// newHarness sets up environments devel (skipConfirmation) and prod, each
// with Deployment "web" running web:0.9.0, and commits manifests asking for
// web:1.0.0 in both.
func newHarness(t testing.TB, envs ...string) *harness {
	t.Helper()
	env := cluster.Env(t)
	if len(envs) == 0 {
		envs = []string{"devel", "prod"}
	}
	h := &harness{t: t, git: gitserver.New(t), ns: map[string]string{}}
	h.url = h.git.Init(t, "manifests")
	h.stateNS = env.Namespace(t)
	cfgEnvs := map[string]config.Environment{}
	for _, e := range envs {
		h.ns[e] = env.Namespace(t)
		cluster.Env(t).CreateDeployment(t, h.ns[e], "web", imageRepo+"web:0.9.0")
		cfgEnvs[e] = config.Environment{LockPath: "apps/" + e,
			Targets: []config.Target{{Name: "a", Namespace: h.ns[e]}}}
	}
	f := false
	h.cfg = &config.Config{
		Source:       config.Source{URL: h.url, Branch: "main", Root: ".", Interval: config.Duration{Duration: time.Hour}},
		Environments: cfgEnvs,
		Registry:     config.Registry{VerifyDigests: &f, PinDigests: &f},
		Server:       config.Server{Listen: "127.0.0.1:0"},
		Locks:        config.Locks{Storage: "kubernetes", Namespace: h.stateNS},
		State:        config.State{Namespace: h.stateNS},
	}
	h.cfg.Default()
	h.cfg.Workloads.RolloutTimeout = config.Duration{Duration: time.Minute}
	if err := h.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range envs {
		files["environments/"+e+"/manifest.json"] = manifestJSON(e == "devel", map[string]string{"web": "1.0.0"})
	}
	h.git.Repo("manifests").Commit(t, "main", files, "initial manifests")
	return h
}

// commit writes one environment's manifest.
func (h *harness) commit(envName string, skip bool, services map[string]string) string {
	h.t.Helper()
	return h.git.Repo("manifests").Commit(h.t, "main",
		map[string]string{"environments/" + envName + "/manifest.json": manifestJSON(skip, services)}, "bump "+envName)
}

func waitImage(t testing.TB, ns, name, want string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%s/%s to run %s", ns, name, want), func() bool { return cluster.Env(t).Image(t, ns, name) == want })
}

// running is a started daemon.
type running struct {
	d    *Daemon
	url  string
	stop func()
	err  atomic.Value
}

func fastLeaderElection() LeaderElection {
	return LeaderElection{Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond}
}

// start runs a daemon for h until the test ends (or stop is called).
func (h *harness) start(opts ...Option) *running {
	h.t.Helper()
	return h.startWith(nil, opts...)
}

// startWith is start with wopts added to the options of the daemon's
// parts' builder (internal/wire).
func (h *harness) startWith(wopts []wire.Option, opts ...Option) *running {
	h.t.Helper()
	env := cluster.Env(h.t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	recv, err := webhook.New(testSecret)
	if err != nil {
		h.t.Fatal(err)
	}
	base := []wire.Option{wire.WithRESTConfig(env.Config), wire.WithWebhook(recv),
		wire.WithSourceOptions(gitsource.WithCacheDir(h.t.TempDir()), gitsource.WithJitter(0))}
	d, err := build(h.cfg, append(base, wopts...), append([]Option{WithLeaderElection(fastLeaderElection())}, opts...)...)
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	// As `reconciler run` composes them: the API beside the daemon.
	authn, err := auth.New(auth.WithTokens(testTokens()...), auth.WithApproverPolicy(peoplePolicy{}))
	if err != nil {
		h.t.Fatal(err)
	}
	srv, err := api.New(d, append([]api.Option{api.WithAuthenticator(authn), api.WithMetrics(d.Metrics().Registry), api.WithWebhook(recv)},
		h.apiOpts...)...)
	if err != nil {
		h.t.Fatalf("api.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r := &running{d: d, url: "http://" + ln.Addr().String()}
	go func() {
		defer close(done)
		if err := srv.ServeWhile(ctx, ln, d.Run); err != nil {
			r.err.Store(err)
		}
	}()
	var once atomic.Bool
	r.stop = func() {
		if once.Swap(true) {
			return
		}
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			h.t.Errorf("daemon did not stop within 30s")
		}
	}
	h.t.Cleanup(r.stop)
	return r
}

// call sends an API request and returns the status code and body.
func (r *running) call(t testing.TB, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var payload []byte
	if body != nil {
		payload, _ = json.Marshal(body)
	}
	// Polls (testenv.WaitFor, every 10 ms) outrun the API's per-token rate
	// limit on a slow machine: a 429 is waited out as a client should, for
	// its Retry-After, and sent again.
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequest(method, r.url+path, bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || attempt == 20 {
			return resp.StatusCode, b
		}
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 && s < 10 {
			wait = time.Duration(s)*time.Second + 10*time.Millisecond
		}
		time.Sleep(wait)
	}
}

// environment reads one environment through the API.
func (r *running) environment(t testing.TB, name string) status.Environment {
	t.Helper()
	code, b := r.call(t, "GET", "/api/v1/environments/"+name, testToken, nil)
	if code != http.StatusOK {
		t.Fatalf("GET environment %s: %d %s", name, code, b)
	}
	var v status.Environment
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding environment %s: %v\n%s", name, err, b)
	}
	return v
}

func (r *running) history(t testing.TB, name string) []approval.Entry {
	t.Helper()
	code, b := r.call(t, "GET", "/api/v1/environments/"+name+"/history", testToken, nil)
	if code != http.StatusOK {
		t.Fatalf("GET history %s: %d %s", name, code, b)
	}
	var out struct{ History []approval.Entry }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.History
}

// waitPending waits until name has a pending plan for revision and returns it.
func (r *running) waitPending(t testing.TB, name, revision string) approval.Pending {
	t.Helper()
	var p *approval.Pending
	testenv.WaitFor(t, 30*time.Second, "a pending plan in "+name+" for "+approval.ShortRevision(revision), func() bool {
		p = r.environment(t, name).Pending
		return p != nil && p.Revision == revision
	})
	return *p
}

// push sends a signed GitHub push webhook for h's repository.
func (r *running) push(t testing.TB, h *harness, delivery string) {
	t.Helper()
	body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"0000000000000000000000000000000000000001","repository":{"clone_url":%q,"full_name":"acme/manifests"}}`, h.url)
	d := githubtest.Delivery{Event: "push", ID: delivery, Body: []byte(body)}
	code, msg, err := githubtest.Send(context.Background(), r.url+"/webhook/github", testSecret, d)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK {
		t.Fatalf("webhook: %d %s", code, msg)
	}
}
