package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
)

// TestPlanAndRunTalkToTheClusterAlike: `reconciler plan` and `reconciler run`
// reach the API server through a recording proxy; the typed clients of both
// (workloads, state, leases, Events) identify themselves and negotiate the
// content type the same way: one builder, internal/wire, makes them all.
func TestPlanAndRunTalkToTheClusterAlike(t *testing.T) {
	env := cluster.Env(t)
	upstream, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	authed, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = authed
	var (
		mu      sync.Mutex
		command string
		seen    = map[string]map[string]bool{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/stagehand.io/") { // the lock store's dynamic client speaks JSON by design
			mu.Lock()
			if seen[command] == nil {
				seen[command] = map[string]bool{}
			}
			seen[command]["User-Agent: "+r.UserAgent()+"; Accept: "+r.Header.Get("Accept")] = true
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: proxy
clusters: [{name: proxy, cluster: {server: %q}}]
users: [{name: anonymous, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: anonymous}}]
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	git := gitserver.New(t)
	repo := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "prod")
	ns := env.Namespace(t)
	cluster.Env(t).CreateDeployment(t, ns, "web", "example.com/web:1.0.0")
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q}
environments:
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
`, repo, filepath.Join(dir, "cache"), kubeconfig, ns, ns, ns, kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, run := range []struct {
		name string
		args []string
	}{
		{name: "plan", args: []string{"plan", "--config", cfgPath, "--env", "prod"}},
		{name: "run", args: []string{"run", "--config", cfgPath, "--once", "--log-level", "error"}},
	} {
		mu.Lock()
		command = run.name
		mu.Unlock()
		if _, stderr, code := runReconciler(t, run.args...); code != 0 {
			t.Fatalf("reconciler %s: exit %d\n%s", run.name, code, stderr)
		}
	}
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	want := []string{"User-Agent: stagehand; Accept: application/vnd.kubernetes.protobuf,application/json"}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range []string{"plan", "run"} {
		if diff := cmp.Diff(want, keys(seen[c])); diff != "" {
			t.Errorf("reconciler %s's requests (-want +got):\n%s", c, diff)
		}
	}
}
