package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/notify"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

// TestRunNotifies: `reconciler run --once` with a webhook sink announces
// prod's pending plan and dev's auto-approved deploy (reported to the
// configured gate although dev skips confirmation), and a sink that holds
// the deploy's event does not hold up the deploy: dev is patched, and its
// outcome recorded, while its notification is still held. (This control
// plane runs no controllers: the rollout times out after 1s, so the deploy
// ends failed.)
func TestRunNotifies(t *testing.T) {
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/dev/manifest.json":  `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
		"environments/prod/manifest.json": `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "dev and prod")
	devNS, prodNS := env.Namespace(t), env.Namespace(t)
	env.CreateDeployment(t, devNS, "web", "example.com/web:1.0.0")
	env.CreateDeployment(t, prodNS, "web", "example.com/web:1.0.0")

	key := []byte("hook key")
	release, held := make(chan struct{}), make(chan struct{}, 1)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(notify.SignatureHeader) != notify.Sign(key, body) {
			t.Errorf("bad signature on %s", body)
		}
		e := event.New()
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("decoding the CloudEvent: %v", err)
		}
		if e.Type() == notify.TypePrefix+notify.DeployFailed {
			held <- struct{}{}
			<-release
		}
		mu.Lock()
		got = append(got, e.Type()+" "+e.Subject())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfgPath := write("reconciler.yaml", fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q}
environments:
  dev: {lockPath: apps/dev, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
workloads: {rolloutTimeout: 1s}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
notifications:
  - {name: hook, type: webhook, urlFile: %s, secretFile: %s}
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, devNS, env.Kubeconfig, prodNS, devNS, devNS, env.Kubeconfig,
		write("url", srv.URL), write("key", string(key))))

	type result struct {
		stdout, stderr string
		code           int
	}
	done := make(chan result, 1)
	go func() {
		stdout, stderr, code := runReconciler(t, "run", "--config", cfgPath, "--once", "--log-level", "error")
		done <- result{stdout, stderr, code}
	}()
	select {
	case <-held:
	case r := <-done:
		close(release)
		t.Fatalf("run --once ended before dev's deploy was announced: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	case <-time.After(3 * time.Minute):
		close(release)
		t.Fatal("dev's deploy was not announced")
	}
	if img := env.Image(t, devNS, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("dev's image is %s while its notification is held; want the deploy done, example.com/web:2.0.0", img)
	}
	st, err := state.NewStore(env.Clientset, devNS).Load(context.Background(), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.History[0].Result != "failed" || st.History[0].Approver != "stagehand:skipConfirmation" {
		t.Errorf("dev's history while its notification is held: %+v; want the deploy recorded", st.History)
	}
	close(release)
	r := <-done
	if r.code != 1 || !strings.Contains(r.stderr, "environment dev") || !strings.Contains(r.stderr, "rollout not finished") {
		t.Fatalf("run --once: exit %d\nstdout %s\nstderr %s; want exit 1 for dev's timed-out rollout", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(got)
	// Every step of each environment's sequence too: dev's deployment failed (a
	// timed-out rollout), prod's waits at its approval.
	want := []string{
		"sh.stagehand.approval.started prod", "sh.stagehand.approval.triggered prod",
		"sh.stagehand.deploy.failed dev",
		"sh.stagehand.deployment.finished dev", "sh.stagehand.deployment.started dev", "sh.stagehand.deployment.triggered dev",
		"sh.stagehand.dev.delivery.finished dev", "sh.stagehand.dev.delivery.started dev",
		"sh.stagehand.plan.approved dev", "sh.stagehand.plan.pending prod",
		"sh.stagehand.prod.delivery.started prod",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
