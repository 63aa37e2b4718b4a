package wire_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// builderConfig has environments devel and prod whose targets are on the
// same cluster (one kubeconfig, one context), prod's on a second one too.
func builderConfig(t *testing.T) *config.Config {
	t.Helper()
	kc := writeKubeconfig(t)
	cfg := &config.Config{
		Source: config.Source{URL: "https://git.example.com/manifests.git", Branch: "main", CacheDir: t.TempDir()},
		Environments: map[string]config.Environment{
			"devel": {LockPath: "apps/devel", Targets: []config.Target{{Name: "a", Namespace: "devel", Kubeconfig: kc, Context: "one"}}},
			"prod": {LockPath: "apps/prod", Targets: []config.Target{{Name: "a", Namespace: "prod", Kubeconfig: kc, Context: "one"},
				{Name: "b", Namespace: "prod", Kubeconfig: kc, Context: "two"}}},
		},
		Locks: config.Locks{Storage: "kubernetes", Namespace: "stagehand"},
		State: config.State{Namespace: "stagehand", Kubeconfig: kc, Context: "one"},
	}
	cfg.Default()
	return cfg
}

func newBuilder(t *testing.T, cfg *config.Config, opts ...wire.Option) *wire.Builder {
	t.Helper()
	b, err := wire.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestBuilderBuildsOnce: every part asked for twice is the same object, and
// targets on the same cluster share one client, whichever environment they
// belong to. Nothing here talks to a cluster.
func TestBuilderBuildsOnce(t *testing.T) {
	b := newBuilder(t, builderConfig(t))
	same := func(name string, get func() (any, error)) {
		t.Helper()
		first, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		second, err := get()
		if err != nil {
			t.Fatalf("%s again: %v", name, err)
		}
		if first != second {
			t.Errorf("%s built twice: %p then %p", name, first, second)
		}
	}
	same("Clients", func() (any, error) { return b.Clients() })
	same("StateClient", func() (any, error) { return b.StateClient() })
	same("Store", func() (any, error) { return b.Store() })
	same("LockService", func() (any, error) { return b.LockService() })
	same("Reconciler", func() (any, error) { return b.Reconciler() })
	same("Source", func() (any, error) { return b.Source() })
	same("HTTPTransport", func() (any, error) { return b.HTTPTransport() })

	all, err := b.AllTargets()
	if err != nil {
		t.Fatal(err)
	}
	devel, err := b.Targets("devel")
	if err != nil {
		t.Fatal(err)
	}
	if got := []any{all["devel"][0].Client, all["prod"][0].Client, devel[0].Client}; got[0] != got[1] || got[0] != got[2] {
		t.Errorf("targets on cluster one have clients %p, %p, %p: want one shared client", got...)
	}
	if all["prod"][1].Client == all["prod"][0].Client {
		t.Error("targets on clusters one and two share a client")
	}
	clients, err := b.Clients()
	if err != nil {
		t.Fatal(err)
	}
	cached, err := clients.Client(b.Config().State.Kubeconfig, b.Config().State.Context)
	if err != nil {
		t.Fatal(err)
	}
	state, err := b.StateClient()
	if err != nil {
		t.Fatal(err)
	}
	if state == cached {
		t.Error("the state client is the cache's: it would not follow the API server's clock alone")
	}
	store, err := b.Store()
	if err != nil {
		t.Fatal(err)
	}
	if store.Client() != state || store.Namespace() != "stagehand" {
		t.Errorf("the state store writes through %p in %q, want the state client %p in stagehand", store.Client(), store.Namespace(), state)
	}
	if _, err := b.Targets("staging"); err == nil || !strings.Contains(err.Error(), "environments.staging: not configured") {
		t.Errorf("Targets(staging) = %v, want an error naming environments.staging", err)
	}
}

// TestBuilderFromConfig: what the builder builds, or refuses, from each
// configuration.
func TestBuilderFromConfig(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type built struct{ Webhook, Pushes, GitHub bool }
	for _, tc := range []struct {
		name    string
		edit    func(*config.Config)
		opts    []wire.Option
		want    built
		wantErr string
	}{
		{"polled only", func(*config.Config) {}, nil, built{}, ""},
		{"webhook secret", func(c *config.Config) { c.GitHub.WebhookSecretFile = secret }, nil, built{Webhook: true, Pushes: true}, ""},
		{"webhook secret missing", func(c *config.Config) { c.GitHub.WebhookSecretFile = filepath.Join(dir, "nope") }, nil, built{}, "github.webhookSecretFile"},
		{"github app", func(c *config.Config) {
			c.GitHub = config.GitHub{Owner: "acme", Repo: "manifests", WebhookSecretFile: secret,
				App: &config.GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: writeKey(t)}, Approvers: config.Approvers{MinPermission: "write"}}
		}, nil, built{Webhook: true, Pushes: true, GitHub: true}, ""},
		{"github app key missing", func(c *config.Config) {
			c.GitHub = config.GitHub{Owner: "acme", Repo: "manifests", App: &config.GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: filepath.Join(dir, "nope")},
				Approvers: config.Approvers{MinPermission: "write"}}
		}, nil, built{}, "github.app.privateKeyFile"},
		{"github token, no app (prbot)", func(c *config.Config) {
			c.GitHub = config.GitHub{Owner: "acme", Repo: "manifests", Approvers: config.Approvers{MinPermission: "write"}}
		},
			[]wire.Option{wire.WithGitHubToken("ghp_x")}, built{GitHub: true}, ""},
		{"memory locks", func(c *config.Config) { c.Locks.Storage = "memory" }, nil, built{}, ""},
		{"unknown locks", func(c *config.Config) { c.Locks.Storage = "etcd" }, nil, built{}, `locks.storage: unknown storage "etcd"`},
		{"no source url", func(c *config.Config) { c.Source.URL = "" }, nil, built{}, "source.url: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := builderConfig(t)
			tc.edit(cfg)
			b := newBuilder(t, cfg, tc.opts...)
			var got built
			err := func() error {
				r, err := b.Webhook()
				if err != nil {
					return err
				}
				p, err := b.Pushes()
				if err != nil {
					return err
				}
				gh, err := b.GitHub()
				if err != nil {
					return err
				}
				got = built{Webhook: r != nil, Pushes: p != nil, GitHub: gh != nil}
				if _, err := b.Reconciler(); err != nil {
					return err
				}
				_, err = b.Source()
				return err
			}()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want one naming %q", err, tc.wantErr)
			case tc.wantErr != "":
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("built (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuilderOneTransportToGitHub: the GitHub client goes through the
// builder's one transport (one pool of connections), which HTTPTransport
// hands to the other users (user-token checks, OAuth), and a preview's
// source is a new one per branch.
func TestBuilderOneTransportToGitHub(t *testing.T) {
	cfg := builderConfig(t)
	cfg.GitHub = config.GitHub{APIURL: "https://ghe.example.com/api/v3/", Owner: "acme", Repo: "manifests",
		App: &config.GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: writeKey(t)}, Approvers: config.Approvers{MinPermission: "write"}}
	rt := &recordingTransport{}
	b := newBuilder(t, cfg, wire.WithHTTPTransport(rt),
		wire.WithGitHubOptions(github.WithRetry(github.RetryPolicy{MaxAttempts: 1})))
	gh, err := b.GitHub()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Approvers().MayRead(context.Background(), "alice"); err == nil {
		t.Fatal("MayRead through a transport that refuses everything succeeded")
	}
	shared, err := b.HTTPTransport()
	if err != nil {
		t.Fatal(err)
	}
	if shared != http.RoundTripper(rt) {
		t.Errorf("HTTPTransport = %T, want WithHTTPTransport's", shared)
	}
	if diff := cmp.Diff([]string{"ghe.example.com"}, rt.hostsSeen()); diff != "" {
		t.Errorf("hosts reached through the builder's transport (-want +got):\n%s", diff)
	}
	if rt.count("/app/installations/2/access_tokens") == 0 {
		t.Errorf("paths through the builder's transport: %v; want the App's token exchange", rt.paths)
	}
	one, err := b.BranchSource("feature", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	two, err := b.BranchSource("feature", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if one == two {
		t.Error("BranchSource returned the same source twice: previews of one branch would share a cache")
	}
}

// recordingTransport records every request and answers none.
type recordingTransport struct {
	mu    sync.Mutex
	paths []string
	hosts map[string]bool
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hosts == nil {
		r.hosts = map[string]bool{}
	}
	r.hosts[req.URL.Host] = true
	r.paths = append(r.paths, req.URL.Path)
	return nil, errors.New("recordingTransport answers nothing")
}

func (r *recordingTransport) hostsSeen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for h := range r.hosts {
		out = append(out, h)
	}
	return out
}

func (r *recordingTransport) count(suffix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.paths {
		if strings.HasSuffix(p, suffix) {
			n++
		}
	}
	return n
}

// writeKey writes a GitHub App's private key.
func writeKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "app.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBuilderPartsConcurrently: the Builder's three parts build under
// locks of their own, and one asks another (the reconciler the lock
// service, the git source the transport, the authenticator the clients).
// Every part asked for at once from many goroutines, in every order, is
// built once and no call waits on another forever.
func TestBuilderPartsConcurrently(t *testing.T) {
	cfg := builderConfig(t)
	cfg.Server.KubernetesAuth = true // the authenticator asks the Kubernetes part too
	b := newBuilder(t, cfg)
	parts := []struct {
		name string
		get  func() (any, error)
	}{
		{"Reconciler", func() (any, error) { return b.Reconciler() }},
		{"Source", func() (any, error) { return b.Source() }},
		{"Authenticator", func() (any, error) { return b.Authenticator() }},
		{"LockService", func() (any, error) { return b.LockService() }},
		{"Store", func() (any, error) { return b.Store() }},
		{"HTTPTransport", func() (any, error) { return b.HTTPTransport() }},
		{"Clients", func() (any, error) { return b.Clients() }},
	}
	const callers = 8
	got := make([][]any, callers)
	errs := make(chan error, callers*len(parts))
	var wg sync.WaitGroup
	for c := range callers {
		got[c] = make([]any, len(parts))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range parts {
				j := (i + c) % len(parts) // each caller starts at another part
				v, err := parts[j].get()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", parts[j].name, err)
					continue
				}
				got[c][j] = v
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for c := 1; c < callers; c++ {
		for j, p := range parts {
			if got[c][j] != got[0][j] {
				t.Errorf("%s built more than once: caller 0 got %p, caller %d %p", p.name, got[0][j], c, got[c][j])
			}
		}
	}
}
