package chart

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

var (
	binMu    sync.Mutex
	binPaths = map[string]string{} // command name → built binary in binDir
)

// build compiles ./cmd/<name> once per test binary, as the image does.
func build(t *testing.T, name string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binPaths[name]; ok {
		return p
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(binDir, name)
	cmd := exec.Command("go", "build", "-o", p, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/%s: %v\n%s", name, err, out)
	}
	binPaths[name] = p
	return p
}

// fixture is an installed chart, a manifests repository asking for web
// 2.0.0 in devel where web 1.0.0 runs, and the reconciler's command line as
// the chart's Deployment gives it, pointed at a local copy of the rendered
// reconciler.yaml.
type fixture struct {
	rel, devel string
	wantImage  string
	addr       string
	// apiToken and webhookSecret are in the Secrets the chart mounts.
	apiToken, webhookSecret string
	// ciToken is a named token of secrets.tokens (read and lock).
	ciToken string
	args    []string
	env     []string
}

func setup(t *testing.T) fixture {
	t.Helper()
	env := cluster.Env(t)
	ctx := t.Context()
	f := fixture{rel: env.Namespace(t), devel: env.Namespace(t)}

	reg := registrytest.New(t)
	reg.Push(t, "team/web", "1.0.0")
	digest := reg.Push(t, "team/web", "2.0.0")
	f.wantImage = reg.Ref("team/web", "2.0.0") + "@" + digest
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "web 2.0.0 to devel")

	web := testenv.Deployment("web", reg.Ref("team/web", "1.0.0"))
	if _, err := env.Clientset.AppsV1().Deployments(f.devel).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	f.apiToken, f.webhookSecret, f.ciToken = randomHex(t), randomHex(t), randomHex(t)
	for name, data := range map[string]map[string]string{
		"stagehand-api":     {"token": f.apiToken},
		"stagehand-webhook": {"secret": f.webhookSecret},
		"stagehand-tokens":  {"tokens.yaml": "- {name: chart-ci, token: " + f.ciToken + ", scopes: [read, lock]}\n"},
	} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
		if _, err := env.Clientset.CoreV1().Secrets(f.rel).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	values := valuesFile(t, map[string]any{
		"config": map[string]any{
			"source": map[string]any{"url": url, "interval": "2s"},
			"environments": map[string]any{"devel": map[string]any{"lockPath": "apps/devel", "targets": []any{
				map[string]any{"name": "a", "namespace": f.devel},
			}}},
			"registry": map[string]any{"insecure": []any{reg.Host()}},
			"github":   map[string]any{"owner": "acme", "repo": "manifests"},
		},
		"secrets": map[string]any{
			"apiToken": map[string]any{"secretName": "stagehand-api"},
			"tokens":   map[string]any{"secretName": "stagehand-tokens"},
			"webhook":  map[string]any{"secretName": "stagehand-webhook"},
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

	// The pod's view, on this machine: the config volume (reconciler.yaml and
	// the Secrets) written out as the kubelet would, under dir instead of
	// /etc/stagehand; the git cache (an emptyDir in the pod) in a temporary
	// directory; the server on a free loopback port.
	dir := t.TempDir()
	d := find(t, objs, "Deployment", f.rel, "sh-stagehand")
	materialize(t, objs, d, f.rel, dir)
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	f.addr = testenv.FreeAddr(t)
	rendered, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	local := strings.ReplaceAll(string(rendered), "/etc/stagehand/", dir+"/")
	if err := os.WriteFile(cfgPath, localConfig(t, []byte(local), filepath.Join(t.TempDir(), "cache"), f.addr), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range facts(t, d).Args {
		f.args = append(f.args, strings.ReplaceAll(a, "/etc/stagehand/", dir+"/"))
	}
	f.env = append(os.Environ(),
		"KUBECONFIG="+kubeconfigFile(t, saConfig(t, f.rel, "sh-stagehand"), f.rel),
		"POD_NAMESPACE="+f.rel, "POD_NAME=sh-stagehand-0", "HOME="+t.TempDir())
	return f
}

// TestReconcileAsServiceAccount installs the chart, then runs the reconciler
// binary for one pass (`--once`) with the chart's arguments and rendered
// reconciler.yaml and nothing but a real token of the chart's
// ServiceAccount. The pass must deploy the manifest change: the chart grants
// enough, and TestRBAC* show it grants no more.
func TestReconcileAsServiceAccount(t *testing.T) {
	bin := build(t, "reconciler")
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
// leader election on, HTTP server up, Secrets mounted — with the
// ServiceAccount's token: it takes the Lease, reports ready, deploys, takes
// and releases a lock through its API (Lock objects, with the chart's rights),
// verifies webhooks with the mounted secret, and stops cleanly on SIGTERM.
func TestDaemonAsServiceAccount(t *testing.T) {
	env := cluster.Env(t)
	bin := build(t, "reconciler")
	f := setup(t)
	cmd := exec.Command(bin, f.args...)
	cmd.Env = f.env
	p := startProcess(t, "reconciler", cmd)

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
		case <-p.exited:
			t.Fatalf("reconciler exited early: %v\n%s", p.err, p.out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: lease held by sh-stagehand-0: %v (%v), web deployed: %v (%v), /healthz %d, /readyz %d\n%s",
				held, lerr, deployed, derr, status(f.addr, "/healthz"), status(f.addr, "/readyz"), p.out.String())
		}
	}
	// The mounted API token and webhook secret are the ones in the Secrets,
	// and the lock API works with the ServiceAccount's rights.
	base := "http://" + f.addr
	hookBody := `{"zen": "chart test"}`
	signed := githubtest.Sign(f.webhookSecret, []byte(hookBody))
	checks := []struct {
		name, method, path, token, body string
		header                          map[string]string
		want                            int
	}{
		{name: "API without token", method: "GET", path: "/api/v1/environments", want: http.StatusUnauthorized},
		{name: "API with the mounted token", method: "GET", path: "/api/v1/environments", token: f.apiToken, want: http.StatusOK},
		{name: "take a lock", method: "POST", path: "/api/v1/locks", token: f.apiToken,
			body: `{"path": "apps/devel/b", "type": "incident", "author": "chart-test", "duration": "1h"}`, want: http.StatusCreated},
		{name: "the lock blocks", method: "GET", path: "/api/v1/check/apps/devel/b/web?type=deploy", token: f.apiToken, want: http.StatusLocked},
		{name: "a named token of the mounted tokens file", method: "GET", path: "/api/v1/environments", token: f.ciToken, want: http.StatusOK},
		{name: "the lock is not the named token's to remove", method: "DELETE", path: "/api/v1/locks/apps/devel/b?type=incident", token: f.ciToken, want: http.StatusForbidden},
		{name: "nor may it approve", method: "POST", path: "/api/v1/environments/devel/approve", token: f.ciToken, body: `{"planHash": "sha256:x"}`, want: http.StatusForbidden},
		{name: "list locks", method: "GET", path: "/api/v1/locks", token: f.apiToken, want: http.StatusOK},
		{name: "unlock", method: "DELETE", path: "/api/v1/locks/apps/devel/b?type=incident", token: f.apiToken, want: http.StatusOK},
		{name: "free again", method: "GET", path: "/api/v1/check/apps/devel/b/web?type=deploy", token: f.apiToken, want: http.StatusOK},
		{name: "webhook with a wrong signature", method: "POST", path: "/webhook/github", body: hookBody,
			header: map[string]string{"X-Hub-Signature-256": "sha256=00", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1",
				"Content-Type": "application/json"},
			want: http.StatusUnauthorized},
		{name: "webhook signed with the mounted secret", method: "POST", path: "/webhook/github", body: hookBody,
			header: map[string]string{"X-Hub-Signature-256": signed, "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d2",
				"Content-Type": "application/json"},
			want: http.StatusOK},
	}
	for _, c := range checks {
		req, err := http.NewRequestWithContext(t.Context(), c.method, base+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s %s = %d %s, want %d", c.name, c.method, c.path, resp.StatusCode, body, c.want)
		}
	}

	p.stop(t)
	if strings.Contains(p.out.String(), "forbidden") {
		t.Errorf("the reconciler met a forbidden request:\n%s", p.out.String())
	}
	f.check(t, p.out.String())
}

// check asserts what one deploy leaves behind: the image, an Event, state.
func (f fixture) check(t *testing.T, out string) {
	t.Helper()
	env := cluster.Env(t)
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

// process is a binary under test, started with its output collected and
// killed when the test ends.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    testenv.Buffer
	exited chan struct{} // closed when the process has ended; err is then its result
	err    error
}

func startProcess(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// stop sends SIGTERM and wants a clean exit within 30 s.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", p.name, p.err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30 s after SIGTERM\n%s", p.name, p.out.String())
	}
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

// materialize writes the files of the Deployment's config volume into dir as
// the kubelet does: the rendered ConfigMap's keys and the referenced Secrets'
// keys (read from the cluster), at the paths the projection gives.
func materialize(t *testing.T, objs []*unstructured.Unstructured, d *unstructured.Unstructured, ns, dir string) {
	t.Helper()
	env := cluster.Env(t)
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		srcs, _, _ := unstructured.NestedSlice(v.(map[string]any), "projected", "sources")
		for _, src := range srcs {
			src := src.(map[string]any)
			var data map[string]string
			var kind string
			switch {
			case src["configMap"] != nil:
				kind = "configMap"
				name, _, _ := unstructured.NestedString(src, kind, "name")
				data, _, _ = unstructured.NestedStringMap(find(t, objs, "ConfigMap", ns, name).Object, "data")
			case src["secret"] != nil:
				kind = "secret"
				name, _, _ := unstructured.NestedString(src, kind, "name")
				sec, err := env.Clientset.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("the config volume needs Secret %s/%s: %v", ns, name, err)
				}
				data = map[string]string{}
				for k, b := range sec.Data {
					data[k] = string(b)
				}
			default:
				continue
			}
			items, _, _ := unstructured.NestedSlice(src, kind, "items")
			for _, it := range items {
				key, _, _ := unstructured.NestedString(it.(map[string]any), "key")
				p, _, _ := unstructured.NestedString(it.(map[string]any), "path")
				val, ok := data[key]
				if !ok {
					t.Fatalf("the config volume projects key %q, which its source lacks", key)
				}
				file := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(val), 0o400); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
