package chart

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
)

var (
	reconcilerOnce sync.Once
	reconcilerBin  string
	reconcilerErr  error
)

// reconciler builds cmd/reconciler once per test binary, as the image does.
func reconciler(t *testing.T) string {
	t.Helper()
	reconcilerOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			reconcilerErr = err
			return
		}
		dir, err := os.MkdirTemp("", "stagehand-chart-test-")
		if err != nil {
			reconcilerErr = err
			return
		}
		reconcilerBin = filepath.Join(dir, "reconciler")
		cmd := exec.Command("go", "build", "-o", reconcilerBin, "./cmd/reconciler")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			reconcilerErr = &buildError{err: err, out: string(out)}
		}
	})
	if reconcilerErr != nil {
		t.Fatalf("building cmd/reconciler: %v", reconcilerErr)
	}
	return reconcilerBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// fixture is an installed chart, a manifests repository asking for web
// 2.0.0 in devel where web 1.0.0 runs, and the reconciler's command line as
// the chart's Deployment gives it, pointed at a local copy of the rendered
// reconciler.yaml.
type fixture struct {
	rel, devel string
	wantImage  string
	addr       string
	args       []string
	env        []string
}

func setup(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	f := fixture{rel: env.Namespace(t), devel: env.Namespace(t)}

	reg := registrytest.New(t)
	reg.Push(t, "team/web", "1.0.0")
	digest := reg.Push(t, "team/web", "2.0.0")
	f.wantImage = reg.Ref("team/web", "2.0.0") + "@" + digest
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Commit(t, "manifests", "main", map[string]string{
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "web 2.0.0 to devel")

	web := deployment("web")
	web.Spec.Template.Spec.Containers[0].Image = reg.Ref("team/web", "1.0.0")
	if _, err := env.Clientset.AppsV1().Deployments(f.devel).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	values := valuesFile(t, map[string]any{
		"config": map[string]any{
			"source": map[string]any{"url": url, "interval": "2s"},
			"environments": map[string]any{"devel": map[string]any{"lockPath": "apps/devel", "targets": []any{
				map[string]any{"name": "a", "namespace": f.devel},
			}}},
			"registry": map[string]any{"insecure": []any{reg.Host()}},
		},
	})
	objs := render(t, f.rel, values)
	var install []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			install = append(install, o)
		}
	}
	if err := newApplier(t, env.Config).applyAll(ctx, install, false); err != nil {
		t.Fatal(err)
	}

	// The pod's view, on this machine: reconciler.yaml as rendered, with the
	// git cache (an emptyDir in the pod) in a temporary directory and the
	// server on a free loopback port.
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	f.addr = freeAddr(t)
	if err := os.WriteFile(cfgPath, localConfig(t, renderedConfig(t, objs), filepath.Join(dir, "cache"), f.addr), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range facts(t, find(t, objs, "Deployment", f.rel, "sh-stagehand")).Args {
		if strings.HasPrefix(a, "--config=") {
			a = "--config=" + cfgPath
		}
		f.args = append(f.args, a)
	}
	f.env = append(os.Environ(),
		"KUBECONFIG="+kubeconfigFile(t, saConfig(t, f.rel, "sh-stagehand"), f.rel),
		"POD_NAMESPACE="+f.rel, "POD_NAME=sh-stagehand-0", "HOME="+dir)
	return f
}

// TestReconcileAsServiceAccount installs the chart, then runs the reconciler
// binary for one pass (`--once`) with the chart's arguments and rendered
// reconciler.yaml and nothing but a real token of the chart's
// ServiceAccount. The pass must deploy the manifest change: the chart grants
// enough, and TestRBAC* show it grants no more.
func TestReconcileAsServiceAccount(t *testing.T) {
	bin := reconciler(t)
	f := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append(f.args, "--once")
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reconciler %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	f.check(t, string(out))
}

// TestDaemonAsServiceAccount runs the reconciler as the Deployment does —
// leader election on, HTTP server up — with the ServiceAccount's token: it
// takes the Lease, reports ready, deploys, and stops cleanly on SIGTERM.
func TestDaemonAsServiceAccount(t *testing.T) {
	bin := reconciler(t)
	f := setup(t)
	cmd := exec.Command(bin, f.args...)
	cmd.Env = f.env
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when the process has ended; waitErr is then its result.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()

	deadline := time.Now().Add(90 * time.Second)
	for {
		l, lerr := env.Clientset.CoordinationV1().Leases(f.rel).Get(t.Context(), "stagehand-reconciler", metav1.GetOptions{})
		d, derr := env.Clientset.AppsV1().Deployments(f.devel).Get(t.Context(), "web", metav1.GetOptions{})
		held := lerr == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "sh-stagehand-0"
		deployed := derr == nil && d.Spec.Template.Spec.Containers[0].Image == f.wantImage
		if held && deployed && status(f.addr, "/healthz") == http.StatusOK && status(f.addr, "/readyz") == http.StatusOK {
			break
		}
		select {
		case <-exited:
			t.Fatalf("reconciler exited early: %v\n%s", waitErr, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: lease held by sh-stagehand-0: %v (%v), web deployed: %v (%v), /healthz %d, /readyz %d\n%s",
				held, lerr, deployed, derr, status(f.addr, "/healthz"), status(f.addr, "/readyz"), out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("reconciler after SIGTERM: %v\n%s", waitErr, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("reconciler still running 30 s after SIGTERM\n%s", out.String())
	}
	if strings.Contains(out.String(), "forbidden") {
		t.Errorf("the reconciler met a forbidden request:\n%s", out.String())
	}
	f.check(t, out.String())
}

// check asserts what one deploy leaves behind: the image, an Event, state.
func (f fixture) check(t *testing.T, out string) {
	t.Helper()
	ctx := t.Context()
	got, err := env.Clientset.AppsV1().Deployments(f.devel).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := got.Spec.Template.Spec.Containers[0].Image; img != f.wantImage {
		t.Errorf("image after reconciling as the ServiceAccount = %s, want %s\nreconciler output:\n%s", img, f.wantImage, out)
	}
	evs, err := env.Clientset.CoreV1().Events(f.devel).List(ctx, metav1.ListOptions{})
	if err != nil || len(evs.Items) == 0 {
		t.Errorf("no Event about the deploy in %s (%v)\n%s", f.devel, err, out)
	}
	cms, err := env.Clientset.CoreV1().ConfigMaps(f.rel).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var state []string
	for _, cm := range cms.Items {
		if cm.Name != "sh-stagehand" && cm.Name != "kube-root-ca.crt" {
			state = append(state, cm.Name)
		}
	}
	if len(state) == 0 {
		t.Errorf("no state ConfigMap written in the release namespace %s\n%s", f.rel, out)
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// localConfig moves the git cache of a rendered reconciler.yaml to cache and
// the server to listen.
func localConfig(t *testing.T, rendered []byte, cache, listen string) []byte {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(rendered, &m); err != nil {
		t.Fatal(err)
	}
	m["source"].(map[string]any)["cacheDir"] = cache
	m["server"].(map[string]any)["listen"] = listen
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// status returns the HTTP status of GET http://addr/path, 0 when unreachable.
func status(addr, path string) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
