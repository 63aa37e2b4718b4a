package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// binary is one command of ./cmd built once per test binary.
type binary struct {
	once sync.Once
	path string
	err  error
}

var reconcilerBin, prbotBin binary

// remove deletes the binary's directory, once the suite is over.
func (b *binary) remove() {
	if b.path != "" {
		os.RemoveAll(filepath.Dir(b.path))
	}
}

// reconcilerBinary builds ./cmd/reconciler once per test binary.
func reconcilerBinary(t *testing.T) string { return reconcilerBin.build(t, "reconciler") }

// prbotBinary builds ./cmd/prbot once per test binary.
func prbotBinary(t *testing.T) string { return prbotBin.build(t, "prbot") }

// build builds ./cmd/name with the stagehand_faketime tag: a process started
// with $STAGEHAND_FAKETIME_OFFSET (internal/clock) runs with its clock
// shifted; without it, on the host's.
func (b *binary) build(t *testing.T, name string) string {
	t.Helper()
	b.once.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "stagehand-faults-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-tags", "stagehand_faketime", "-o", b.path, "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building cmd/%s: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// lease timings of every replica: short, so that a hand-over takes seconds.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// fixture is one case's world: a namespace holding the workloads, the state
// and the Lease; a manifests repository; the reconciler.yaml the replicas
// share (each gets its own listen address and cache).
type fixture struct {
	env    *testenv.Env
	ns     string
	git    *gitserver.Server
	gitURL string
	token  string // the API token (scopes read and approve:*)
	config map[string]any
	dir    string
}

// newFixture makes the namespace, the repository (its first commit holds
// files) and the base configuration: one environment "devel" with one target
// in the namespace, memory locks, digest checks off (cases about the registry
// turn them on).
func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	env := cluster.Env(t)
	f := &fixture{env: env, ns: env.Namespace(t), git: gitserver.New(t), dir: t.TempDir()}
	f.gitURL = f.git.Init(t, "manifests")
	f.git.Repo("manifests").Commit(t, "main", files, "first")
	f.token = randomHex(t)
	tokens := fmt.Sprintf("- {name: operator, token: %s, scopes: [read, \"approve:*\", lock]}\n", f.token)
	if err := os.WriteFile(filepath.Join(f.dir, "tokens.yaml"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	f.config = map[string]any{
		"source": map[string]any{"url": f.gitURL, "interval": "1s"},
		"environments": map[string]any{"devel": map[string]any{"lockPath": "apps/devel", "targets": []any{
			map[string]any{"name": "a", "namespace": f.ns},
		}}},
		"registry":  map[string]any{"pinDigests": false, "verifyDigests": false},
		"locks":     map[string]any{"storage": "memory"},
		"state":     map[string]any{"namespace": f.ns},
		"workloads": map[string]any{"rolloutTimeout": "2m", "concurrency": 2},
		"server":    map[string]any{"tokensFile": filepath.Join(f.dir, "tokens.yaml"), "ui": false},
	}
	return f
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// replica is one reconciler process.
type replica struct {
	name   string
	addr   string
	args   []string
	envv   []string
	bin    string
	cmd    *exec.Cmd
	out    *testenv.Buffer
	exited chan struct{}
}

// start writes name's reconciler.yaml (the fixture's configuration with its
// own listen address and git cache, then edit's changes) and starts it with
// leader election on. extraEnv is added to its environment.
func (f *fixture) start(t *testing.T, name string, edit func(map[string]any), extraEnv ...string) *replica {
	t.Helper()
	cfg := clone(t, f.config)
	r := &replica{name: name, addr: testenv.FreeAddr(t), bin: reconcilerBinary(t)}
	srv := cfg["server"].(map[string]any)
	srv["listen"] = r.addr
	cfg["source"].(map[string]any)["cacheDir"] = filepath.Join(f.dir, name, "cache")
	if edit != nil {
		edit(cfg)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, name, "reconciler.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r.args = []string{"run", "--config", path, "--identity", name,
		"--leader-election-lease-duration=" + leaseDuration.String(),
		"--leader-election-renew-deadline=" + renewDeadline.String(),
		"--leader-election-retry-period=" + retryPeriod.String()}
	r.envv = append(os.Environ(), "KUBECONFIG="+f.env.Kubeconfig, "POD_NAMESPACE="+f.ns, "HOME="+filepath.Join(f.dir, name))
	r.envv = append(r.envv, extraEnv...)
	r.run(t)
	return r
}

// run starts the process (again, after a kill, with the same configuration).
func (r *replica) run(t *testing.T) {
	t.Helper()
	r.out = &testenv.Buffer{}
	r.exited = make(chan struct{})
	r.cmd = exec.Command(r.bin, r.args...)
	r.cmd.Env = r.envv
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, exited := r.cmd, r.exited
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", r.name, tail(r.out.String(), 6000))
		}
	})
}

// kill sends SIGKILL and waits until the process is gone.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.exited
}

// alive says whether the process still runs.
func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// get GETs path of the replica's API with the operator's token into v; it
// returns the status code (0 when unreachable).
func (r *replica) get(ctx context.Context, token, path string, v any) int {
	return r.do(ctx, http.MethodGet, token, path, "", v)
}

func (r *replica) do(ctx context.Context, method, token, path, body string, v any) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.addr+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, v); err != nil {
			return 0
		}
	}
	return resp.StatusCode
}

// holder returns the holder of the leader Lease ("" when none or unreadable).
func (f *fixture) holder(ctx context.Context) string {
	l, err := f.env.Clientset.CoordinationV1().Leases(f.ns).Get(ctx, "stagehand-reconciler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// entry is the part of a history entry the cases check.
type entry struct {
	ID        int       `json:"id"`
	Revision  string    `json:"revision"`
	PlanHash  string    `json:"planHash"`
	Approver  string    `json:"approver"`
	Approvers []string  `json:"approvers"`
	Result    string    `json:"result"`
	Message   string    `json:"message"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Changes   []struct {
		Service string `json:"service"`
	} `json:"changes"`
}

// history reads devel's history through r's API (nil when unreachable).
func (f *fixture) history(ctx context.Context, r *replica) ([]entry, bool) {
	var h struct {
		History []entry `json:"history"`
	}
	if r.get(ctx, f.token, "/api/v1/environments/devel/history", &h) != http.StatusOK {
		return nil, false
	}
	return h.History, true
}

// images returns the image of each Deployment of the namespace by name.
func (f *fixture) images(ctx context.Context) (map[string]string, error) {
	ds, err := f.env.Clientset.AppsV1().Deployments(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, d := range ds.Items {
		m[d.Name] = d.Spec.Template.Spec.Containers[0].Image
	}
	return m, nil
}

// generations returns the metadata.generation of each Deployment of the
// namespace: 1 when created, one more for every change of its spec.
func (f *fixture) generations(ctx context.Context) (map[string]int64, error) {
	ds, err := f.env.Clientset.AppsV1().Deployments(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, d := range ds.Items {
		m[d.Name] = d.Generation
	}
	return m, nil
}

// patches counts, per Deployment of the namespace, the patches sent to it
// (the API server's audit log: verb patch on the object itself, not a
// subresource) that it answered with success; a Deployment whose only
// patches were answered with an error counts those: a patch whose client was
// killed may be stored and still answered with an error. One answered with
// an error (504: its client was SIGKILLed mid-request) and then sent again by
// the next process counts once: either the first was not stored, or the
// second, carrying the same image, changed nothing; a second change shows in
// the Deployment's generation, which cases 1, 2 and 8 check beside this count.
func (f *fixture) patches(t *testing.T) map[string]int {
	t.Helper()
	evs, err := f.env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	ok, failed := map[string]int{}, map[string]int{}
	for _, ev := range evs {
		if ev.Verb == "patch" && ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Subresource == "" &&
			ev.ObjectRef.Namespace == f.ns {
			if c := ev.ResponseStatus.Code; c >= 200 && c < 300 {
				ok[ev.ObjectRef.Name]++
			} else {
				failed[ev.ObjectRef.Name]++
			}
		}
	}
	for name, k := range failed {
		if ok[name] == 0 {
			ok[name] = k
		}
	}
	return ok
}

// auditOf returns the audit log's events about Deployment name, for a
// failure message.
func (f *fixture) auditOf(t *testing.T, name string) string {
	t.Helper()
	evs, err := f.env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		if ev.ObjectRef.Namespace == f.ns && ev.ObjectRef.Name == name {
			fmt.Fprintf(&b, "\n  %+v", ev)
		}
	}
	return b.String()
}

func clone(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
