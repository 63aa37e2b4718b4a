package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/ui"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock/crd"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

const stepTimeout = 2 * time.Minute

// printer writes the walkthrough.
type printer struct {
	w     io.Writer
	n, of int
}

func (p *printer) step(title string, lines ...string) {
	p.n++
	fmt.Fprintf(p.w, "\n━━ %d/%d  %s\n", p.n, p.of, title)
	for _, l := range lines {
		fmt.Fprintf(p.w, "   %s\n", l)
	}
}

func (p *printer) say(format string, a ...any) { fmt.Fprintf(p.w, "   "+format+"\n", a...) }
func (p *printer) ok(format string, a ...any)  { fmt.Fprintf(p.w, "   ✓ "+format+"\n", a...) }

// demo is the running demo's parts.
type demo struct {
	o        options
	p        *printer
	root     string
	dir      string
	client   kubernetes.Interface
	repo     *gitRepo
	files    demoFiles
	server   string
	d        *daemon.Daemon
	logPath  string
	reconBin string
	// storefront is the local stand-in for the shop's health endpoint
	// that prod's test task of pipeline.yaml requests.
	storefront string
	// envFile is where a second terminal finds the server, token and
	// kubeconfig (source bin/demo.env); enter hears Enter on the demo's.
	envFile string
	enter   chan struct{}
}

func run(ctx context.Context, o options) (err error) {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "stagehand-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	x := &demo{o: o, p: &printer{w: o.out, of: 11}, root: root, dir: dir, envFile: o.envFile, enter: make(chan struct{}, 1)}
	if x.envFile == "" {
		x.envFile = filepath.Join(root, "bin", "demo.env")
	}
	if err := os.MkdirAll(filepath.Dir(x.envFile), 0o755); err != nil {
		return err
	}
	if !o.auto {
		go x.readEnter(o.in)
	}
	x.reconBin = "go run ./cmd/reconciler"
	if _, err := os.Stat(filepath.Join(root, "bin", "reconciler")); err == nil {
		x.reconBin = "bin/reconciler"
	}
	// The page's address comes first: open it now and watch the demo happen on it.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
	}
	x.server = "http://" + ln.Addr().String()
	served := false // once the reconciler serves on ln, it closes it
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	fmt.Fprintf(o.out, "Dashboard: %s/  (open it in a browser; sign in as \"demo\", no GitHub needed; it answers from step 4)\n\n", x.server)
	fmt.Fprintln(o.out, "Stagehand demo: deploy what the manifests repository says, and nothing else.")
	fmt.Fprintln(o.out, "Everything runs on this machine and is torn down when the demo ends (Ctrl-C).")

	// 1. Control plane.
	x.p.step("Starting a local Kubernetes control plane",
		"etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with one fake node,",
		"so Deployments really roll out (built once into bin/k8s by `make testbin`).")
	start := time.Now()
	kenv, err := testenv.Start(ctx, testenv.WithRollouts(), testenv.WithCRDs(filepath.Join(root, "pkg", "lock", "crd", crd.File)))
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer kenv.Stop()
	x.client = kenv.Clientset
	x.p.ok("API server ready in %s", since(start))
	x.p.say("kubectl --kubeconfig %s get deployments -A", kenv.Kubeconfig)

	// 2. Workloads.
	x.p.step("Creating the example workloads",
		"Namespaces apps-devel, apps-staging and apps-prod, each with one Deployment per service,",
		"all running one release behind what examples/environments asks for:")
	if err := createWorkloads(ctx, x.client); err != nil {
		return err
	}
	for _, svc := range services() {
		x.p.say("  %-14s %s%s:%s", svc, imageRepo, svc, running[svc])
	}

	// 3. Git.
	x.p.step("Serving the manifests repository",
		"A real git server (git http-backend) with a first commit of examples/environments/.")
	stopShop, err := x.startStorefront()
	if err != nil {
		return err
	}
	defer stopShop()
	if x.repo, err = startGitRepo(ctx, filepath.Join(dir, "git"), filepath.Join(root, "examples", "environments"), x.localPipeline); err != nil {
		return err
	}
	defer x.repo.stop()
	x.p.ok("%s", x.repo.URL)
	x.p.say("Clone it, edit, push: the reconciler picks it up (git clone %s)", x.repo.URL)

	// 4. Reconciler.
	served = true
	stopDaemon, err := x.startReconciler(ctx, ln, kenv.Kubeconfig)
	if err != nil {
		return err
	}
	defer stopDaemon()
	if err := x.writeEnvFile(kenv.Kubeconfig); err != nil {
		return err
	}
	defer os.Remove(x.envFile)
	x.p.say("env      %s  (source it in another terminal: STAGEHAND_SERVER, STAGEHAND_TOKEN, KUBECONFIG)", x.rel(x.envFile))

	steps := []func(context.Context) error{x.develDeploys, x.bumpDevel, x.prodPending, x.approveProd, x.releaseProd, x.approveStaging}
	for _, s := range steps {
		if err := s(ctx); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(o.out, "\nInterrupted; tearing everything down.")
				return nil
			}
			return err
		}
	}
	x.whereToLook(kenv.Kubeconfig)
	if o.auto {
		fmt.Fprintln(o.out, "\nDemo finished (--auto); tearing everything down.")
		return nil
	}
	fmt.Fprintln(o.out, "\nEverything keeps running so you can explore. Press Ctrl-C to stop; nothing is left behind.")
	<-ctx.Done()
	fmt.Fprintln(o.out, "\nStopping the reconciler, the git server and the control plane...")
	return nil
}

// startReconciler writes the configuration and runs the daemon in this
// process, serving the API and the page on ln.
func (x *demo) startReconciler(ctx context.Context, ln net.Listener, kubeconfig string) (func(), error) {
	var err error
	if x.files, err = writeConfig(x.dir, x.repo.URL, kubeconfig, ln.Addr().String()); err != nil {
		ln.Close()
		return nil, err
	}
	x.p.step("Starting the reconciler (reconciler run --config reconciler.yaml, in this process)",
		"One worker per environment; devel has skipConfirmation: true, staging and prod wait for approval.")
	cfg, err := config.Load(x.files.config)
	if err != nil {
		ln.Close()
		return nil, err
	}
	x.logPath = filepath.Join(x.dir, "reconciler.log")
	logFile, err := os.Create(x.logPath)
	if err != nil {
		ln.Close()
		return nil, err
	}
	log := crzap.New(crzap.WriteTo(logFile), crzap.JSONEncoder())
	klog.SetLogger(log.WithName("client-go"))
	// The test and evaluation tasks of pipeline.yaml's sequences, as reconciler run runs them.
	vopts, err := wire.VerifyOptions(cfg.Verification)
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	vf, err := verify.New(vopts...)
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	// The daemon's parts built once, as reconciler run builds them.
	b, err := wire.New(cfg, wire.DaemonOptions("demo", log.WithName("reconciler"))...)
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	d, err := daemon.New(cfg, append(parts, daemon.WithLogger(log.WithName("reconciler")), daemon.WithIdentity("demo"), daemon.WithVerifier(vf))...)
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	recv, err := b.Webhook()
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	page, err := ui.New(d, ui.WithDemoLogin(cfg.Server.UI.DemoLogin), ui.WithErrorStatus(api.StatusOf))
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	authn, err := auth.New(auth.WithTokensFile(cfg.Server.TokensFile))
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	srv, err := api.New(d, api.WithAuthenticator(authn), api.WithMetrics(d.Metrics().Registry), api.WithWebhook(recv),
		api.WithUI(page, ui.Patterns()...))
	if err != nil {
		ln.Close()
		logFile.Close()
		return nil, err
	}
	x.d = d
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.ServeWhile(dctx, ln, d.Run) }()
	x.p.ok("API on %s", x.server)
	x.p.ok("Dashboard on %s/ (sign in as demo)", x.server)
	x.p.say("config   %s", x.files.config)
	x.p.say("logs     %s", x.logPath)
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintln(x.o.out, "reconciler:", err)
			}
		case <-time.After(20 * time.Second):
			fmt.Fprintln(x.o.out, "reconciler did not stop within 20s")
		}
		klog.SetLogger(logr.Discard())
		logFile.Close()
	}, nil
}

// desired resolves env in the working clone: service → tag.
func (x *demo) desired(ctx context.Context, env string) (map[string]string, error) {
	e, err := manifest.Resolve(ctx, manifest.Repo{FS: os.DirFS(x.repo.work), Root: "."}, env)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range e.Services {
		out[s.Name] = s.Containers[0].DockerTag
	}
	return out, nil
}

// waitImages waits until ns runs want (and, with rollout, has rolled out).
func (x *demo) waitImages(ctx context.Context, ns string, want map[string]string, rollout bool) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		got, err := images(ctx, x.client, ns)
		if err == nil && matches(got, want) && (!rollout || rolledOut(ctx, x.client, ns)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to run %v (it runs %v): %w", ns, want, got, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func matches(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func (x *demo) develDeploys(ctx context.Context) error {
	x.p.step("devel deploys by itself",
		"environments/devel/manifest.json says skipConfirmation: true, so its plan is applied at once.")
	want, err := x.desired(ctx, "devel")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := x.waitImages(ctx, "apps-devel", want, true); err != nil {
		return err
	}
	for _, svc := range services() {
		x.p.say("  %-14s %s → %s", svc, running[svc], want[svc])
	}
	x.p.ok("devel deployed and rolled out (%s after the reconciler started)", since(start))
	return nil
}

func (x *demo) bumpDevel(ctx context.Context) error {
	x.p.step("A commit bumps checkout-api in devel",
		"What an upstream CI does (prbot bump): edit environments/devel/checkout-api.json 1.5.0 → 1.5.1,",
		"commit, push; GitHub would then send a push webhook, which the demo sends to /webhook/github.")
	if err := x.repo.edit("environments/devel/checkout-api.json", "1.5.0", "1.5.1"); err != nil {
		return err
	}
	sha, err := x.repo.commitAndPush(ctx, "checkout-api 1.5.1 in devel")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := notifyPush(ctx, x.server, x.files.secret, x.repo.URL, "demo-"+sha[:12]); err != nil {
		return err
	}
	if err := x.waitImages(ctx, "apps-devel", map[string]string{"checkout-api": "1.5.1"}, false); err != nil {
		return err
	}
	patched := since(start)
	if err := x.waitImages(ctx, "apps-devel", map[string]string{"checkout-api": "1.5.1"}, true); err != nil {
		return err
	}
	x.p.ok("commit %s live: patched %s after the push, rolled out after %s", sha[:12], patched, since(start))
	return nil
}

// pending waits for env's pending plan for revision: proposed at revision,
// or at an ancestor of it whose commits since change nothing in env (a
// pending plan outlives them, bound to the revision reviewed).
func (x *demo) pending(ctx context.Context, env, revision string) (*approval.Pending, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	ancestor := map[string]bool{}
	for {
		v, err := x.d.Environment(ctx, env)
		if err == nil && v.Pending != nil {
			r := v.Pending.Revision
			if _, seen := ancestor[r]; !seen && r != revision {
				_, err := x.repo.git(ctx, x.repo.work, "merge-base", "--is-ancestor", r, revision)
				ancestor[r] = err == nil
			}
			if r == revision || ancestor[r] {
				return v.Pending, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a pending plan in %s: %w", env, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (x *demo) prodPending(ctx context.Context) error {
	x.p.step("prod waits for approval",
		"prod has no skipConfirmation: its plan is published and waits at the approval gate.")
	head, err := x.repo.git(ctx, x.repo.work, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	p, err := x.pending(ctx, "prod", head)
	if err != nil {
		return err
	}
	var plan reconcile.Plan
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		return err
	}
	for _, c := range plan.Changes {
		x.p.say("  %-14s %s → %s", c.Service, tagOf(c.From), tagOf(c.To))
	}
	x.p.ok("pending plan %s for revision %s", p.PlanHash, p.Revision[:12])
	if p.Revision != head {
		x.p.say("(the devel commit after %s changes nothing in prod, so prod's plan stays the one proposed there)", p.Revision[:12])
	}
	x.p.say("See it on the page: %s/environments/prod (the plan table, and Approve)", x.server)
	x.p.say("or: curl -H \"Authorization: Bearer $(cat %s)\" %s/api/v1/environments/prod", x.files.tokenFile, x.server)
	if got, err := images(ctx, x.client, "apps-prod"); err == nil && !matches(got, running) {
		return fmt.Errorf("prod changed before approval: %v", got)
	}
	return nil
}

func tagOf(image string) string { return image[strings.LastIndex(image, ":")+1:] }

func (x *demo) approveProd(ctx context.Context) error {
	p, err := x.waitPending(ctx, "prod", false)
	if err != nil {
		return err
	}
	x.p.step("Approve prod with the CLI",
		"The approval names the plan hash: if the plan changed meanwhile, the reconciler refuses.")
	if err := x.decide(ctx, "prod", p.PlanHash, false); err != nil {
		return err
	}
	want, err := x.desired(ctx, "prod")
	if err != nil {
		return err
	}
	if err := x.waitImages(ctx, "apps-prod", want, true); err != nil {
		return err
	}
	x.p.ok("prod runs what its manifest says and has rolled out")
	return nil
}

// rel is path relative to the repository when it is inside it (bin/demo.env), else path.
func (x *demo) rel(path string) string {
	if r, err := filepath.Rel(x.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func (x *demo) whereToLook(kubeconfig string) {
	auth := fmt.Sprintf(`-H "Authorization: Bearer $(cat %s)"`, x.files.tokenFile)
	x.p.step("Where to look",
		x.server+"/                                                  the dashboard: every service in every environment",
		x.server+"/environments/prod                                 prod's plan, history, layout; "+x.server+"/locks",
		x.reconBin+" status --server "+x.server+" --token-file "+x.files.tokenFile+"   the same matrix in the terminal",
		"curl "+auth+" "+x.server+"/api/v1/environments              desired vs live, pending plans",
		"curl "+auth+" "+x.server+"/api/v1/environments/prod/history applied plans: who, what, when",
		"curl "+auth+" "+x.server+"/api/v1/environments/devel/layout which file says what",
		"curl "+x.server+"/metrics                                    Prometheus metrics",
		"kubectl --kubeconfig "+kubeconfig+" get events -n apps-prod  an Event per deployed workload",
		"git clone "+x.repo.URL+"  then edit environments/*/…json and git push",
		"reconciler log: "+x.logPath)
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }

// repoRoot walks up from the working directory to the directory with go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the demo inside the stagehand repository (no go.mod found above the working directory)")
		}
		dir = parent
	}
}
