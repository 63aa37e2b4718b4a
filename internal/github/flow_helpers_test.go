package github_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/github/preview"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// cluster is the control plane of the flow tests, started by the first.
var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }

const secret = "webhook-secret"

// flow is the whole approval path on real parts: a real git server holding the manifests (mirrored into
// githubtest so check runs can be created on its SHAs), a real kube-apiserver with the prod workload, a
// registry, the daemon with the GitHub gate, and webhooks signed and delivered over HTTP.
type flow struct {
	t         *testing.T
	gh        *githubtest.Server
	git       *gitserver.Server
	reg       *registrytest.Registry
	ns        string
	cfg       *config.Config
	cache     string
	hookURL   string
	d         *daemon.Daemon
	stop      func()
	resync    time.Duration // daemon.WithResync when set
	repropose time.Duration // daemon.WithRepropose when set
	// wrapPreview, when set, wraps the daemon's previewer (to hold previews back).
	wrapPreview func(github.Previewer) github.Previewer
	// rolloutTimeout bounds the rollout wait; zero (the default) ends an apply once patched. No controller
	// manager runs here, so a rollout with a timeout never finishes: it fails when the timeout passes.
	rolloutTimeout time.Duration
	// opts are added to the daemon's options (sequence tasks, say).
	opts []daemon.Option
	// sink, when set, is added to the daemon's gate (it hears what a notifier hears).
	sink approval.Gate
	// reported are the errors the handlers reported (OnDecisionError): a click ignored, a decision failed.
	reported reports
}

// reports are errors a handler reported, in order: a test counts them after a webhook was answered.
type reports struct {
	mu   sync.Mutex
	errs []string
}

func (r *reports) add(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err.Error())
}

// count is how many reports so far contain s.
func (r *reports) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.errs {
		if strings.Contains(e, s) {
			n++
		}
	}
	return n
}

func newFlow(t *testing.T) *flow {
	t.Helper()
	env := cluster.Env(t)
	f := &flow{t: t, gh: githubtest.New(t), git: gitserver.New(t), reg: registrytest.New(t), ns: env.Namespace(t), cache: t.TempDir()}
	f.gh.CreateRepo(owner, repo, "main")
	f.gh.Repo(owner, repo).SetPermission("maria", "maintain")
	f.gh.Repo(owner, repo).SetPermission("wendy", "write")
	for _, tag := range []string{"1.0.0", "1.0.1", "1.0.2"} {
		f.reg.Push(t, "team/api", tag)
	}
	env.CreateDeployment(t, f.ns, "api", f.reg.Ref("team/api", "1.0.0"))
	dir := t.TempDir()
	key, hook := filepath.Join(dir, "app.pem"), filepath.Join(dir, "hook")
	if err := os.WriteFile(key, f.gh.App().PrivateKeyPEM(), 0o600); err != nil {
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
			App:       &config.GitHubApp{AppID: f.gh.App().ID(), InstallationID: f.gh.App().InstallationID(), PrivateKeyFile: key},
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
	sha := f.git.Repo("manifests").Commit(f.t, "main", files, "api "+tag)
	f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, "api "+tag)
	return sha
}

// start runs a daemon (a fresh process, as after a restart) with the GitHub gate and handlers.
func (f *flow) start() {
	f.t.Helper()
	r := f.startReplica(daemon.LeaderElection{Enable: false})
	f.d, f.hookURL, f.stop = r.d, r.hookURL, r.stop
}

// replica is one running daemon process with its webhook handler.
type replica struct {
	d       *daemon.Daemon
	hookURL string
	stop    func()
}

// startReplica runs a daemon with the GitHub gate and handlers, as `reconciler run` wires them, electing
// its leader with le; it stops at the end of the test.
func (f *flow) startReplica(le daemon.LeaderElection) *replica {
	f.t.Helper()
	env := cluster.Env(f.t)
	policies := map[string]config.Approvals{}
	for _, env := range f.cfg.EnvironmentNames() {
		policies[env] = f.cfg.ApprovalPolicy(env)
	}
	client, err := github.New(f.cfg.GitHub, github.WithRetry(github.RetryPolicy{MaxAttempts: 5, BaseDelay: 20 * time.Millisecond, MaxWait: 5 * time.Second}),
		github.WithApprovals(policies))
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
	opts := append([]daemon.Option{}, f.opts...)
	if f.resync != 0 {
		opts = append(opts, daemon.WithResync(f.resync))
	}
	if f.repropose != 0 {
		opts = append(opts, daemon.WithRepropose(f.repropose))
	}
	// As `reconciler run` composes it: the daemon's parts built once by internal/wire.
	b, err := wire.New(f.cfg, append(wire.DaemonOptions("flow-test", logr.Discard()), wire.WithWebhook(recv), wire.WithRESTConfig(env.Config),
		wire.WithReconcileOptions(reconcile.WithRolloutTimeout(f.rolloutTimeout)))...) // no scheduler here: patched is the end
	if err != nil {
		f.t.Fatal(err)
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		f.t.Fatal(err)
	}
	d, err := daemon.New(f.cfg, append(append(parts, opts...),
		daemon.WithGate(f.gate(client)),
		daemon.WithAuthors(client), // as `reconciler run` wires it: four-eyes by GitHub login
		daemon.WithLeaderElection(le),
	)...)
	if err != nil {
		f.t.Fatal(err)
	}
	// As `reconciler run` wires it: PR previews plan with the daemon's own planner.
	var previewer github.Previewer = preview.New(f.cfg.Source.CacheDir, f.cfg.EnvironmentNames(), d.Plan, b.BranchSource)
	if f.wrapPreview != nil {
		previewer = f.wrapPreview(previewer)
	}
	handler, err := github.NewHandler(client, d, "main", github.WithPreviewer(previewer),
		github.OnDecisionError(func(err error) {
			f.t.Logf("decision after the webhook: %v", err)
			f.reported.add(err)
		}))
	if err != nil {
		f.t.Fatal(err)
	}
	handler.Register(recv)
	srv, err := api.New(d, api.WithWebhook(recv))
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeWhile(ctx, ln, d.Run) }()
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
			handler.StopPreviews()
			handler.Wait()
		})
	}
	f.t.Cleanup(stop)
	return &replica{d: d, hookURL: "http://" + ln.Addr().String() + "/webhook/github", stop: stop}
}

// gate is the daemon's gate as `reconciler run` composes it: the check-run gate, and the deployments gate
// when github.deployments.enabled is set.
func (f *flow) gate(client *github.Client) approval.Gate {
	gates := []approval.Gate{github.NewGate(client)}
	if f.cfg.GitHub.Deployments.Enabled {
		gates = append(gates, github.NewDeployments(client, f.cfg.GitHub.Deployments))
	}
	if f.sink != nil {
		gates = append(gates, f.sink)
	}
	if len(gates) == 1 {
		return gates[0]
	}
	return approval.Gates(gates...)
}

func (f *flow) restart() {
	f.stop()
	f.start()
}

func (f *flow) trigger() { f.d.Source().Trigger() }

// waitPreview waits until the check run stagehand/prod preview on sha is completed.
func (f *flow) waitPreview(sha string) githubtest.CheckRun {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range f.gh.Repo(owner, repo).CheckRuns() {
			if r.HeadSHA == sha && r.Name == "stagehand/prod preview" && r.Status == "completed" {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("no completed preview on %s", sha[:7])
	return githubtest.CheckRun{}
}

// waitRun waits until the newest check run stagehand/prod on sha satisfies ok.
func (f *flow) waitRun(sha, what string, ok func(githubtest.CheckRun) bool) githubtest.CheckRun {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last githubtest.CheckRun
	for time.Now().Before(deadline) {
		for _, r := range f.gh.Repo(owner, repo).CheckRuns() {
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
	d := f.gh.Webhooks(owner, repo).CheckRunAction(id, action, sender)
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
	return cluster.Env(f.t).Image(f.t, f.ns, "api")
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

func (f *flow) history() []approval.Entry {
	f.t.Helper()
	st, err := f.d.Store().Load(context.Background(), "prod")
	if err != nil {
		f.t.Fatal(err)
	}
	return st.History
}

// waitRunID waits until check run id satisfies ok.
func (f *flow) waitRunID(id int64, what string, ok func(githubtest.CheckRun) bool) githubtest.CheckRun {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, _ := f.gh.Repo(owner, repo).CheckRun(id)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("check run %d never became %s; last: %+v", id, what, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setImage changes the api Deployment's image behind the reconciler's back (drift).
func (f *flow) setImage(image string) {
	f.t.Helper()
	env := cluster.Env(f.t)
	dep, err := env.Clientset.AppsV1().Deployments(f.ns).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = image
	if _, err := env.Clientset.AppsV1().Deployments(f.ns).Update(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}
