package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
)

// TestRunTraces: with tracing.endpoint `reconciler run --once` traces its
// pass (the steps of prod's, which proposes a plan) and sends the spans to
// the collector before it exits; over gRPC as over HTTP.
func TestRunTraces(t *testing.T) {
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	rev := git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "prod")
	ns := env.Namespace(t)
	cluster.Env(t).CreateDeployment(t, ns, "web", "example.com/web:1.0.0")
	recv := tracingtest.Start(t)
	for _, tc := range []struct{ protocol, endpoint string }{{"http/protobuf", recv.HTTPURL()}, {"grpc", recv.GRPCURL()}} {
		t.Run(tc.protocol, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "reconciler.yaml")
			var b strings.Builder
			fmt.Fprintf(&b, "source: {url: %q, branch: main, cacheDir: %q}\nenvironments:\n", url, filepath.Join(dir, "cache"))
			fmt.Fprintf(&b, "  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}\n", env.Kubeconfig, ns)
			fmt.Fprintf(&b, "registry: {verifyDigests: false, pinDigests: false}\nlocks: {namespace: %s}\nstate: {namespace: %s, kubeconfig: %q}\n", ns, ns, env.Kubeconfig)
			fmt.Fprintf(&b, "tracing: {endpoint: %q, protocol: %s, serviceName: stagehand-test}\n", tc.endpoint, tc.protocol)
			if err := os.WriteFile(cfgPath, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			if stdout, stderr, code := runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error"); code != 0 {
				t.Fatalf("run --once: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			// Exported on the way out: the spans are here once run returned.
			var pass tracingtest.Span
			want := map[string]string{"http/protobuf": "http", "grpc": "grpc"}[tc.protocol]
			for _, s := range recv.Spans() {
				if s.Name == "pass" && s.Via == want && s.Service == "stagehand-test" {
					pass = s
				}
			}
			if pass.Attributes["stagehand.environment"] != "prod" || pass.Attributes["stagehand.revision"] != rev {
				t.Fatalf("no pass of prod at %s received over %s: %s", rev, want, tracingtest.Names(recv.Spans()))
			}
			got := tracingtest.Subtree(recv.Spans(), pass.SpanID)
			wantTree := []string{"pass", "  fetch", "  resolve", "  plan", "  gate"}
			if diff := cmp.Diff(wantTree, got); diff != "" {
				t.Errorf("prod's pass (-want +got):\n%s", diff)
			}
		})
	}
}
