package github_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

const secret = "webhook-secret"

// flow is the whole approval path on real parts: a real git server holding the manifests (mirrored into
// githubtest so check runs can be created on its SHAs), a real kube-apiserver with the prod workload, a
// registry, the daemon with the GitHub gate, and webhooks signed and delivered over HTTP.
type flow struct {
	t       *testing.T
	gh      *githubtest.Server
	git     *gitserver.Server
	reg     *registrytest.Registry
	ns      string
	cfg     *config.Config
	cache   string
	hookURL string
	d       *daemon.Daemon
	stop    func()
	resync  time.Duration // daemon.WithResync when set
}

func newFlow(t *testing.T) *flow {
	t.Helper()
	f := &flow{t: t, gh: githubtest.New(t), git: gitserver.New(t), reg: registrytest.New(t), ns: env.Namespace(t), cache: t.TempDir()}
	f.gh.CreateRepo(owner, repo, "main")
	f.gh.SetPermission(owner, repo, "maria", "maintain")
	f.gh.SetPermission(owner, repo, "wendy", "write")
	for _, tag := range []string{"1.0.0", "1.0.1", "1.0.2"} {
		f.reg.Push(t, "team/api", tag)
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Labels: map[string]string{"app.kubernetes.io/name": "api"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: f.reg.Ref("team/api", "1.0.0")}}},
			},
		},
	}
	if _, err := env.Clientset.AppsV1().Deployments(f.ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key, hook := filepath.Join(dir, "app.pem"), filepath.Join(dir, "hook")
	if err := os.WriteFile(key, f.gh.AppPrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	url := f.git.Init(t, "manifests")
	f.cfg = &config.Config{
		Source:       config.Source{URL: url, Branch: "main", Interval: config.Duration{Duration: time.Hour}, CacheDir: f.cache},
		Environments: map[string]config.Environment{"prod": {LockPath: "apps/prod", Targets: []config.Target{{Name: "a", Namespace: f.ns}}}},
		Registry:     config.Registry{Insecure: []string{f.reg.Host()}},
		GitHub: config.GitHub{
			APIURL: f.gh.URL(), Owner: owner, Repo: repo, WebhookSecretFile: hook, DetailsURL: "https://stagehand.example.com",
			App:       &config.GitHubApp{AppID: f.gh.AppID(), InstallationID: f.gh.InstallationID(), PrivateKeyFile: key},
			Approvers: config.Approvers{MinPermission: "maintain"},
		},
		Locks: config.Locks{Storage: "memory", Namespace: f.ns},
		State: config.State{Namespace: f.ns},
	}
	f.cfg.Default()
	if err := f.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// commit puts tag into the prod manifest on the real git server and mirrors the commit into githubtest.
func (f *flow) commit(tag string) string {
	f.t.Helper()
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "` + tag + `"}]}]}`}
	sha := f.git.Commit(f.t, "manifests", "main", files, "api "+tag)
	f.gh.MirrorCommit(owner, repo, "main", sha, files, "api "+tag)
	return sha
}

// start runs a daemon (a fresh process, as after a restart) with the GitHub gate and handlers.
func (f *flow) start() {
	f.t.Helper()
	client, err := github.New(f.cfg.GitHub, github.WithRetry(github.RetryPolicy{MaxAttempts: 5, BaseDelay: 20 * time.Millisecond, MaxWait: 5 * time.Second}))
	if err != nil {
		f.t.Fatal(err)
	}
	recv, err := webhook.New(secret)
	if err != nil {
		f.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	opts := []daemon.Option{}
	if f.resync != 0 {
		opts = append(opts, daemon.WithResync(f.resync))
	}
	d, err := daemon.New(f.cfg, append(opts,
		daemon.WithGate(github.NewGate(client)),
		daemon.WithWebhook(recv),
		daemon.WithRESTConfig(env.Config),
		daemon.WithLeaderElection(daemon.LeaderElection{Enable: false}),
		daemon.WithListener(ln),
		daemon.WithReconcileOptions(reconcile.WithRolloutTimeout(0)), // no scheduler here: patched is the end
	)...)
	if err != nil {
		f.t.Fatal(err)
	}
	// As `reconciler run` wires it: PR previews plan with the daemon's own planner.
	preview := github.NewBranchPreviewer(f.cfg.Source, f.cfg.EnvironmentNames(), d.Plan, gitsource.WithCacheDir(f.t.TempDir()))
	github.NewHandler(client, github.FromDaemon(d), preview, "main").Register(recv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	f.d, f.hookURL = d, "http://"+ln.Addr().String()+"/webhook/github"
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					f.t.Errorf("daemon: %v", err)
				}
			case <-time.After(30 * time.Second):
				f.t.Errorf("daemon did not stop within 30s of its context ending")
			}
		})
	}
	f.stop = stop
	f.t.Cleanup(stop)
}

func (f *flow) restart() {
	f.stop()
	f.start()
}

func (f *flow) trigger() { f.d.Source().Trigger() }

// waitRun waits until the newest check run stagehand/prod on sha satisfies ok.
func (f *flow) waitRun(sha, what string, ok func(githubtest.CheckRun) bool) githubtest.CheckRun {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last githubtest.CheckRun
	for time.Now().Before(deadline) {
		for _, r := range f.gh.CheckRuns(owner, repo) {
			if r.HeadSHA == sha && r.Name == "stagehand/prod" {
				last = r
			}
		}
		if last.ID != 0 && ok(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("check run on %s never became %s; last: %+v", sha[:7], what, last)
	return last
}

func awaitingApproval(r githubtest.CheckRun) bool {
	return r.Status == "completed" && r.Conclusion == "action_required"
}

func concluded(c string) func(githubtest.CheckRun) bool {
	return func(r githubtest.CheckRun) bool { return r.Status == "completed" && r.Conclusion == c }
}

// click delivers the check_run requested_action webhook for run id.
func (f *flow) click(id int64, action, sender, withSecret string) (int, githubtest.Delivery) {
	f.t.Helper()
	d := f.gh.CheckRunActionDelivery(owner, repo, id, action, sender)
	return f.send(d, withSecret), d
}

func (f *flow) send(d githubtest.Delivery, withSecret string) int {
	f.t.Helper()
	code, body, err := githubtest.Send(context.Background(), f.hookURL, withSecret, d)
	if err != nil {
		f.t.Fatal(err)
	}
	if code >= 500 {
		f.t.Errorf("webhook answered %d: %s", code, body)
	}
	return code
}

func (f *flow) image() string {
	f.t.Helper()
	d, err := env.Clientset.AppsV1().Deployments(f.ns).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func (f *flow) waitImage(tag string) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(f.image(), ":"+tag+"@sha256:") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("image is %s, want tag %s", f.image(), tag)
}

func (f *flow) history() []daemon.Entry {
	f.t.Helper()
	st, err := f.d.Store().Load(context.Background(), "prod")
	if err != nil {
		f.t.Fatal(err)
	}
	return st.History
}

func TestFlowApprove(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	// GitHub is flaky while the plan is proposed and while the result is reported: retried, nothing lost.
	f.gh.Inject(githubtest.Fault{Method: "POST", Route: "/repos/{owner}/{repo}/check-runs", Status: http.StatusBadGateway, Times: 2})
	f.gh.Inject(githubtest.Fault{Method: "GET", Route: "/repos/{owner}/{repo}/commits/{ref}/check-runs", Status: http.StatusTooManyRequests, RetryAfter: time.Second})
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if !strings.Contains(run.Summary, "`1.0.0` → `1.0.1`") || !strings.HasPrefix(run.ExternalID, "sha256:") {
		t.Errorf("proposed run: external_id %q summary:\n%s", run.ExternalID, run.Summary)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied before approval: %s", f.image())
	}

	// A forged click (wrong secret) is refused with 401 and changes nothing.
	if code, _ := f.click(run.ID, "approve", "maria", "not-the-secret"); code != http.StatusUnauthorized {
		t.Errorf("bad signature: %d, want 401", code)
	}
	// Someone with write only: the run stays pending and says who may approve.
	if code, _ := f.click(run.ID, "approve", "wendy", secret); code != http.StatusOK {
		t.Errorf("unauthorised click: %d", code)
	}
	run = f.waitRun(sha, "noting the refused click", func(r githubtest.CheckRun) bool { return strings.Contains(r.Summary, "@wendy may not approve") })
	if !awaitingApproval(run) || len(run.Actions) != 2 || !strings.Contains(run.Summary, "maintain permission or higher") {
		t.Errorf("after unauthorised click: %+v", run)
	}
	time.Sleep(200 * time.Millisecond)
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied after a refused click: %s", f.image())
	}

	f.gh.Inject(githubtest.Fault{Method: "PATCH", Route: "/repos/{owner}/{repo}/check-runs/{check_run_id}", Status: http.StatusServiceUnavailable, Times: 2})
	code, delivery := f.click(run.ID, "approve", "maria", secret)
	if code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	f.waitImage("1.0.1")
	run = f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(run.Summary, "Approved by @maria") || !strings.Contains(run.Summary, "Deployment/api") {
		t.Errorf("result summary:\n%s", run.Summary)
	}
	if n := f.gh.FaultsLeft(); n != 0 {
		t.Errorf("%d injected faults never reached", n)
	}
	// A replayed delivery is dropped: nothing decided or written again.
	patches := f.gh.CountRequests("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
	if code := f.send(delivery, secret); code != http.StatusOK {
		t.Errorf("replay: %d", code)
	}
	time.Sleep(300 * time.Millisecond)
	if got := f.gh.CountRequests("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"); got != patches {
		t.Errorf("replayed delivery updated the check run (%d → %d PATCHes)", patches, got)
	}
	if h := f.history(); len(h) != 1 || h[0].Approver != "maria" || h[0].Result != daemon.ResultSucceeded {
		t.Errorf("history = %+v, want one success approved by maria", h)
	}
}

func TestFlowReject(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.click(run.ID, "reject", "acme", secret)
	run = f.waitRun(sha, "cancelled", concluded("cancelled"))
	if !strings.Contains(run.Title, "Rejected by @acme") {
		t.Errorf("title %q", run.Title)
	}
	if h := f.history(); len(h) != 1 || h[0].Result != daemon.ResultRejected {
		t.Errorf("history = %+v", h)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("rejected plan applied: %s", f.image())
	}
}

func TestFlowSupersededCommit(t *testing.T) {
	f := newFlow(t)
	old := f.commit("1.0.1")
	f.start()
	oldRun := f.waitRun(old, "awaiting approval", awaitingApproval)
	newer := f.commit("1.0.2")
	f.trigger()
	superseded := f.waitRun(old, "neutral", concluded("neutral"))
	if !strings.Contains(superseded.Title, "Superseded by "+newer[:7]) {
		t.Errorf("old run title %q", superseded.Title)
	}
	f.waitRun(newer, "awaiting approval", awaitingApproval)
	// A click on the old run (its page was still open) applies nothing.
	f.click(oldRun.ID, "approve", "maria", secret)
	time.Sleep(300 * time.Millisecond)
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("superseded plan applied: %s", f.image())
	}
	if r, _ := f.gh.CheckRun(owner, repo, oldRun.ID); r.Conclusion != "neutral" || !strings.HasPrefix(r.Title, "Superseded by") {
		t.Errorf("old run after the click: %s/%s %q", r.Status, r.Conclusion, r.Title)
	}
}

func TestFlowStaleHash(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	// Drift: someone deploys 1.0.2 by hand, so the approved plan (1.0.0 → 1.0.1) is not what would run.
	dep, err := env.Clientset.AppsV1().Deployments(f.ns).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = f.reg.Ref("team/api", "1.0.2")
	if _, err := env.Clientset.AppsV1().Deployments(f.ns).Update(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.click(run.ID, "approve", "maria", secret)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, _ := f.gh.CheckRun(owner, repo, run.ID)
		if r.Conclusion == "neutral" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stale run not withdrawn: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fresh := f.waitRun(sha, "a fresh run awaiting approval", func(r githubtest.CheckRun) bool { return r.ID != run.ID && awaitingApproval(r) })
	if fresh.ExternalID == run.ExternalID || !strings.Contains(fresh.Summary, "`1.0.2` → `1.0.1`") {
		t.Errorf("fresh run: %q\n%s", fresh.ExternalID, fresh.Summary)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.2") {
		t.Errorf("stale plan applied: %s", f.image())
	}
}

func TestFlowRestartWithPendingApproval(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.restart()
	time.Sleep(500 * time.Millisecond) // the new process has polled and found the pending plan in its state
	f.click(run.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
	if n := len(f.gh.CheckRuns(owner, repo)); n != 1 {
		t.Errorf("%d check runs, want the one proposed before the restart", n)
	}
}

func TestFlowPullRequestPreview(t *testing.T) {
	f := newFlow(t)
	f.commit("1.0.0") // main runs what the cluster runs: nothing pending
	f.start()
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "1.0.2"}]}]}`}
	head := f.git.Commit(t, "manifests", "bump-api", files, "api 1.0.2")
	f.gh.MirrorCommit(owner, repo, "bump-api", head, files, "api 1.0.2")
	n := f.gh.OpenPullRequest(owner, repo, "bump-api", "main", "Bump api to 1.0.2", "maria")
	if code := f.send(f.gh.PullRequestDelivery(owner, repo, n, "opened", "maria"), secret); code != http.StatusOK {
		t.Fatalf("pull_request delivery: %d", code)
	}
	var preview githubtest.CheckRun
	for _, r := range f.gh.CheckRuns(owner, repo) {
		if r.Name == "stagehand/prod preview" && r.HeadSHA == head {
			preview = r
		}
	}
	if preview.Conclusion != "neutral" || !strings.Contains(preview.Summary, "`1.0.0` → `1.0.2`") || !strings.Contains(preview.Summary, "Merging this pull request") {
		t.Errorf("preview run: %s/%s %q\n%s", preview.Status, preview.Conclusion, preview.Title, preview.Summary)
	}
	if len(preview.Actions) != 0 {
		t.Errorf("a preview offers actions: %+v", preview.Actions)
	}
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Errorf("a preview applied something: %s", f.image())
	}
}

func TestFlowPlanLargerThanTheSummaryLimit(t *testing.T) {
	f := newFlow(t)
	// One real change and 600 services with no workload: each is a problem line, together well over
	// GitHub's 65,535-character summary.
	var services []string
	services = append(services, `{"name": "api", "containers": [{"dockerTag": "1.0.1"}]}`)
	for i := range 600 {
		services = append(services, fmt.Sprintf(`{"name": "ghost-%03d", "containers": [{"dockerTag": "1.0.0"}]}`, i))
	}
	files := map[string]string{"environments/prod/manifest.json": `{"services": [` + strings.Join(services, ",\n") + `]}`}
	sha := f.git.Commit(t, "manifests", "main", files, "many services")
	f.gh.MirrorCommit(owner, repo, "main", sha, files, "many services")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if n := len([]rune(run.Summary)); n > github.SummaryLimit || n < github.SummaryLimit-2000 {
		t.Errorf("summary has %d characters, want just under %d", n, github.SummaryLimit)
	}
	if !strings.Contains(run.Summary, "Cut to fit") || !strings.Contains(run.Summary, "https://stagehand.example.com/api/v1/environments/prod") {
		t.Errorf("cut summary does not point to the full plan; it ends:\n%s", run.Summary[len(run.Summary)-400:])
	}
	if !strings.Contains(run.Title, "1 change in 1 workload, 600 problems") {
		t.Errorf("title %q", run.Title)
	}
	f.click(run.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	// What was approved applied; the problems were part of the approved plan and are repeated.
	done := f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(done.Summary, "600 problems") {
		t.Errorf("result summary:\n%s", done.Summary)
	}
}

func TestFlowDriftReplacesTheCheck(t *testing.T) {
	f := newFlow(t)
	f.resync = 200 * time.Millisecond
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	// Drift without any click: the next resync plans 1.0.2 → 1.0.1, a different plan for the same commit.
	dep, err := env.Clientset.AppsV1().Deployments(f.ns).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = f.reg.Ref("team/api", "1.0.2")
	if _, err := env.Clientset.AppsV1().Deployments(f.ns).Update(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := f.waitRun(sha, "a fresh run awaiting approval", func(r githubtest.CheckRun) bool { return r.ID != run.ID && awaitingApproval(r) })
	if !strings.Contains(fresh.Summary, "`1.0.2` → `1.0.1`") {
		t.Errorf("fresh run:\n%s", fresh.Summary)
	}
	if old, _ := f.gh.CheckRun(owner, repo, run.ID); old.Conclusion != "neutral" || old.Title != "Replaced: the plan changed" {
		t.Errorf("old run: %s/%s %q", old.Status, old.Conclusion, old.Title)
	}
	// Approving the fresh plan deploys it.
	f.click(fresh.ID, "approve", "maria", secret)
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
}

func TestFlowApprovedOverTheAPIShowsOnTheCheck(t *testing.T) {
	f := newFlow(t)
	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if _, err := f.d.Approve(context.Background(), "prod", run.ExternalID, "api"); err != nil {
		t.Fatalf("Approve over the API: %v", err)
	}
	f.waitImage("1.0.1")
	done := f.waitRun(sha, "success", concluded("success"))
	if !strings.Contains(done.Summary, "Approved by the reconciler API.") || done.ID != run.ID {
		t.Errorf("run %d (proposed %d):\n%s", done.ID, run.ID, done.Summary)
	}
}
