package docs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// How a shell block of the documentation is tagged, on the line before it (docs/contributing.md):
// <!-- runnable --> runs it, in order with the page's other runnable blocks, against the demo
// environment; <!-- not-runnable: REASON --> says why it cannot run here.
const (
	runnable    = "runnable"
	notRunnable = "not-runnable"
)

// blockTimeout bounds one runnable block (the longest waits for a rollout or a pending plan).
const blockTimeout = 3 * time.Minute

// isShell reports whether a fence's info string is a shell block, which must be tagged.
func isShell(info string) bool {
	switch strings.Fields(info + " x")[0] {
	case "sh", "bash", "shell", "console", "zsh":
		return true
	}
	return false
}

// TestShellBlocksTagged refuses a shell block that says neither <!-- runnable --> nor
// <!-- not-runnable: REASON -->, a not-runnable one without a reason, and a runnable one that is not
// plain sh or bash, so that no command of the documentation is skipped silently.
func TestShellBlocksTagged(t *testing.T) {
	n := map[string]int{}
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			where := fmt.Sprintf("%s:%d", p.path, b.line)
			switch {
			case !isShell(b.info) && b.run != "":
				t.Errorf("%s: a %q block is tagged %s: only shell blocks are run", where, b.info, b.run)
			case !isShell(b.info):
			case b.run == "":
				t.Errorf("%s: the %s block is not tagged: put <!-- runnable --> or <!-- not-runnable: why --> on the line before it (docs/contributing.md)", where, b.info)
			case b.run == notRunnable && b.reason == "":
				t.Errorf("%s: <!-- not-runnable: --> without a reason", where)
			case b.run == runnable && b.info != "sh" && b.info != "bash":
				t.Errorf("%s: a runnable block must be sh or bash, not %q (a console block holds output)", where, b.info)
			default:
				n[b.run]++
			}
		}
	}
	if n[runnable] == 0 {
		t.Errorf("no shell block is tagged runnable: TestRunnableBlocks checks nothing")
	}
	t.Logf("shell blocks: %d runnable, %d not runnable", n[runnable], n[notRunnable])
}

// TestShellTagParsing keeps the tags honest: the three forms are read as such, and a tag two lines up
// (with prose between) does not count.
func TestShellTagParsing(t *testing.T) {
	text := "<!-- runnable -->\n```sh\necho a\n```\n\n<!-- not-runnable: needs a browser -->\n```sh\nx\n```\n" +
		"<!-- runnable -->\nsome prose\n```sh\ny\n```\n<!-- not-runnable: -->\n```sh\nz\n```\n"
	var got []string
	for _, b := range parsePage("docs/x.md", text).blocks {
		got = append(got, fmt.Sprintf("%d %s %s", b.line, b.run, b.reason))
	}
	want := []string{"2 runnable ", "7 not-runnable needs a browser", "12  ", "16 not-runnable "}
	if diff := cmpStrings(want, got); diff != "" {
		t.Error(diff)
	}
}

func cmpStrings(want, got []string) string {
	if strings.Join(want, "\n") == strings.Join(got, "\n") {
		return ""
	}
	return fmt.Sprintf("blocks (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
}

// TestRunnableBlocks runs the runnable shell blocks of every page, in order, each page against a demo
// environment of its own (demoEnv): the first block that fails fails the page, naming the page, the
// block's line and its output.
func TestRunnableBlocks(t *testing.T) {
	var run []page
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			if b.run == runnable {
				run = append(run, p)
				break
			}
		}
	}
	if len(run) == 0 {
		t.Fatal("no runnable block in the documentation")
	}
	for _, tool := range []string{"bash", "git", "kubectl", "openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the runnable blocks need %s (make shell-tools installs it): %v", tool, err)
		}
	}
	cluster.Env(t) // skips, saying why, when the control plane is not built
	bin := t.TempDir()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/reconciler")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the reconciler: %v\n%s", err, out)
	}
	for _, p := range run {
		t.Run(strings.TrimPrefix(p.path, "docs/"), func(t *testing.T) {
			start := time.Now()
			d := newDemoEnv(t, bin)
			t.Logf("demo environment ready in %s", time.Since(start).Round(time.Millisecond))
			for _, b := range p.blocks {
				if b.run != runnable {
					continue
				}
				began := time.Now()
				out, err := d.run(t.Context(), b.body)
				if err != nil {
					t.Fatalf("%s:%d: the runnable block failed: %v\n--- block ---\n%s--- output ---\n%s%s",
						p.path, b.line, err, b.body, out, d.logs())
				}
				t.Logf("%s:%d ran in %s:\n%s", p.path, b.line, time.Since(began).Round(time.Millisecond), out)
			}
		})
	}
}

// demoEnv is what a page's runnable blocks run against: what the documentation calls "your cluster"
// and "your manifests repository", made of the demo's parts (make demo): the real kube-apiserver with
// rollouts (kwok), namespaces apps-devel and apps-prod each running checkout-api 1.4.1 (a Deployment
// not yet labelled for Stagehand), an empty manifests repository served for real by git, and an OCI
// registry holding checkout-api 1.4.1 and 1.5.0. The blocks run in a shell with KUBECONFIG set,
// the reconciler on PATH, a git identity, and a working directory of their own; exported variables
// and the working directory carry from one block to the next. The documentation's placeholders are
// replaced by this environment's values (substitutions).
type demoEnv struct {
	dir   string // the blocks' home and first working directory
	state string // the exported variables and working directory a block leaves
	subs  []string
	pgids []int
}

func newDemoEnv(t *testing.T, bin string) *demoEnv {
	t.Helper()
	env := cluster.Env(t)
	ctx := t.Context()
	reg := registrytest.New(t)
	for _, tag := range []string{"1.4.1", "1.5.0"} {
		reg.Push(t, "acme/checkout-api", tag)
	}
	before := namespaces(t, env)
	for _, ns := range []string{"apps-devel", "apps-prod"} {
		if _, err := env.Clientset.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d := unlabelled("checkout-api", reg.Ref("acme/checkout-api", "1.4.1"))
		if _, err := env.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { removeNamespaces(t, env, before) })

	git := gitserver.New(t)
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", git.Path("manifests")).CombinedOutput(); err != nil {
		t.Fatalf("creating the manifests repository: %v\n%s", err, out)
	}

	d := &demoEnv{dir: t.TempDir()}
	d.state = filepath.Join(d.dir, ".docs-state")
	d.subs = []string{
		"https://github.com/acme/manifests.git", git.RepoURL("manifests"),
		"127.0.0.1:8080", testenv.FreeAddr(t),
	}
	gitconfig := "[user]\n\tname = Docs Test\n\temail = docs@stagehand.invalid\n[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(filepath.Join(d.dir, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	initial := fmt.Sprintf("export HOME=%q KUBECONFIG=%q PATH=%q GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0\ncd %q\n",
		d.dir, env.Kubeconfig, bin+string(os.PathListSeparator)+os.Getenv("PATH"), d.dir)
	if err := os.WriteFile(d.state, []byte(initial), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	return d
}

// unlabelled is a Deployment as a cluster runs it before Stagehand: selected by its own label, not
// yet labelled app.kubernetes.io/name.
func unlabelled(name, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}},
			},
		},
	}
}

// run runs one block with bash (-e, -o pipefail) after the state the previous block left, in a process
// group of its own (what it starts in the background is stopped when the page ends), and returns its
// output.
func (d *demoEnv) run(ctx context.Context, body string) (string, error) {
	for i := 0; i+1 < len(d.subs); i += 2 {
		body = strings.ReplaceAll(body, d.subs[i], d.subs[i+1])
	}
	script := fmt.Sprintf("set -e -o pipefail\n. %q\ntrap 'st=$?; if [ $st = 0 ]; then { export -p; printf \"cd %%q\\n\" \"$PWD\"; } > %q.new && mv %q.new %q; fi' EXIT\n%s",
		d.state, d.state, d.state, d.state, body)
	out, err := os.CreateTemp(d.dir, ".block-*.out")
	if err != nil {
		return "", err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	ctx, cancel := context.WithTimeout(ctx, blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = d.dir
	cmd.Stdout, cmd.Stderr = out, out // a file: a background job holding it does not keep Wait waiting
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return "", err
	}
	d.pgids = append(d.pgids, cmd.Process.Pid)
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w after %s", ctx.Err(), blockTimeout)
	}
	text, _ := os.ReadFile(out.Name())
	return string(text), err
}

// logs returns the end of every *.log file the blocks wrote (the reconciler's), for a failure's message.
func (d *demoEnv) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(d.dir, "*.log"))
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
		fmt.Fprintf(&b, "--- the last lines of %s ---\n%s\n", filepath.Base(f), strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
	return b.String()
}

// stop ends what the blocks left running (a reconciler in the background): SIGTERM to each block's
// process group, SIGKILL to what is left after ten seconds.
func (d *demoEnv) stop() {
	alive := func() []int {
		var out []int
		for _, g := range d.pgids {
			if syscall.Kill(-g, 0) == nil {
				out = append(out, g)
			}
		}
		return out
	}
	for _, g := range alive() {
		_ = syscall.Kill(-g, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, g := range alive() {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}

func namespaces(t *testing.T, env *testenv.Env) map[string]bool {
	t.Helper()
	list, err := env.Clientset.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, ns := range list.Items {
		out[ns.Name] = true
	}
	return out
}

// removeNamespaces deletes the namespaces made since before (the page's apps-devel, apps-prod,
// stagehand) and waits until they are gone, so that the next page finds the cluster as this one did.
func removeNamespaces(t *testing.T, env *testenv.Env, before map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var made []string
	for ns := range namespaces(t, env) {
		if !before[ns] {
			made = append(made, ns)
			if err := env.Clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting namespace %s: %v", ns, err)
			}
		}
	}
	sort.Strings(made)
	for {
		left := 0
		for _, ns := range made {
			if _, err := env.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
				left++
			}
		}
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("namespaces %v not gone after the page: %v", made, errors.Join(ctx.Err()))
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestFencesAtLineStart refuses a fenced block indented into a list item: the site's Markdown (mkdocs'
// fenced_code) sees no fence there and shows the block as one line of inline code, tag comment and all.
func TestFencesAtLineStart(t *testing.T) {
	for _, p := range pages(t) {
		if !strings.HasPrefix(p.path, "docs/") {
			continue // README.md and ARCHITECTURE.md are read on GitHub only
		}
		for _, b := range p.blocks {
			if blockIndent(p.text, b.line) > 0 {
				t.Errorf("%s:%d: a fenced block indented into a list renders as inline code on the site: start it at the line's beginning, outside the list", p.path, b.line)
			}
		}
	}
}
