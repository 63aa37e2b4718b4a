package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	fluxle "github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/github/preview"
	"github.com/stagehand-gitops/stagehand/internal/notify"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/rollback"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/ui"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// runFlags are the flags of `reconciler run`.
type runFlags struct {
	configPath string
	once       bool
	applyCRDs  bool
	identity   string
	logOpts    logger.Options
	le         fluxle.Options
}

// newRunCommand is `reconciler run --config FILE [--once]`.
func newRunCommand() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run --config FILE [--once]",
		Short: "Deploy every new revision of the manifests repository (the daemon)",
		Long: `Run the reconciler: poll the manifests repository (and wake on push webhooks),
plan each environment, apply skipConfirmation environments at once and hold
the others' plans for approval (reconciler approve, the API or a GitHub
check run). Serves /healthz, /readyz, /metrics, /webhook/github and /api/v1 on
server.listen. With --once: one pass over every environment, no server, no
leader election; exit 1 if any environment failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return rf.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&rf.configPath, "config", "", "reconciler.yaml (required)")
	f.BoolVar(&rf.once, "once", false, "one pass over every environment, then exit (non-zero if anything failed)")
	f.BoolVar(&rf.applyCRDs, "apply-crds", true, "create or upgrade Stagehand's CRDs (locks, environments) at start when missing or older than this build's")
	f.StringVar(&rf.identity, "identity", "", "name of this replica in the leader Lease (default $POD_NAME, else host name and a random suffix)")
	rf.logOpts.BindFlags(f)
	rf.le.BindFlags(f)
	// Two replicas must be safe by default: elect a leader unless told otherwise.
	if fl := f.Lookup("enable-leader-election"); fl != nil {
		fl.DefValue = "true"
		_ = fl.Value.Set("true")
	}
	return cmd
}

// run loads the configuration and runs the daemon (or one pass with --once).
func (rf *runFlags) run(cmd *cobra.Command) error {
	if rf.configPath == "" {
		return command.Usagef("--config is required")
	}
	cfg, err := config.Load(rf.configPath)
	if err != nil {
		return err
	}
	// Every part of the process (and client-go, through klog) logs through log: what a stop cancels
	// (the last Lease renewal, a state read in progress) is not an error.
	log := command.QuietOnStop(cmd.Context(), logger.NewLogger(rf.logOpts))
	logger.SetLogger(log)
	if rf.once {
		rf.le.Enable = false
	}
	// This host's clock; the daemon records times on the API server's.
	local, err := clock.Local(os.LookupEnv)
	if err != nil {
		return err
	}
	if rf.identity == "" {
		rf.identity = os.Getenv("POD_NAME")
	}
	if rf.identity == "" {
		rf.identity = daemon.DefaultIdentity()
	}
	rlog := log.WithName("reconciler")
	// A stop (SIGTERM) is bounded by server.shutdownGrace: the patches of an apply under way get half of
	// it, then the apply is recorded as interrupted, the Lease released and what is queued sent in the rest.
	grace := cfg.Server.ShutdownGrace.Duration
	stopping, stopped := afterGrace(cmd.Context(), grace)
	defer stopped()
	opts := []daemon.Option{daemon.WithLogger(rlog), daemon.WithLeaderElection(rf.le), daemon.WithIdentity(rf.identity),
		daemon.WithApplyGrace(grace / 2)}
	// The notification sinks hear every plan and outcome, those of
	// skipConfirmation environments too (the worker reports them to this gate).
	ntLog := log.WithName("notify")
	lockPaths := map[string]string{}
	for name, env := range cfg.Environments {
		lockPaths[name] = env.LockPath
	}
	nt, err := notify.FromConfig(cfg.Notifications, notify.OnError(func(sink string, err error) {
		ntLog.Error(err, "notification not delivered", "sink", sink)
	}), notify.WithLockPaths(lockPaths))
	if err != nil {
		return err
	}
	// Every component of this process, built once: one set of Kubernetes
	// clients, one transport to GitHub.
	bopts := append(wire.DaemonOptions(rf.identity, rlog), wire.WithLocalClock(local), wire.WithAuthLog(log.WithName("auth")))
	if nt != nil {
		// ... and every lock taken or removed through the API.
		bopts = append(bopts, wire.WithLockObserver(nt.LockChanged))
	}
	// Traces (tracing:, or the OTEL_* variables; off by default), whose failed exports are logged.
	tlog := log.WithName("tracing")
	bopts = append(bopts, wire.WithTracingOptions(tracing.WithErrorHandler(func(err error) { tlog.Error(err, "traces not sent") })))
	b, err := wire.New(cfg, bopts...)
	if err != nil {
		return err
	}
	defer b.Close()
	tp, err := b.Tracing()
	if err != nil {
		return err
	}
	defer func() {
		// What is queued goes out within what is left of the stop's grace.
		if err := tp.Shutdown(stopping); err != nil {
			tlog.Error(err, "flushing traces")
		}
	}()
	if rf.applyCRDs {
		if err := applyCRDs(cmd.Context(), b, rlog); err != nil {
			return err
		}
	}
	var gh *github.Client
	gates := []approval.Gate{approval.Manual()}
	if !rf.once {
		// github.app: approve on GitHub (check run buttons) or over the API/CLI.
		if gh, err = b.GitHub(); err != nil {
			return err
		}
	}
	if gh != nil {
		gates = append(gates, github.NewGate(gh))
		// Four-eyes (approvals.forbidAuthors) knows commit authors by their GitHub logins.
		opts = append(opts, daemon.WithAuthors(gh))
		// The teams and minPermission of approvals.rules are asked of GitHub, as the environment's own.
		opts = append(opts, daemon.WithRuleApprover(func(ctx context.Context, env, login string, rule config.Approvers) (bool, string, error) {
			d, err := gh.Approvers().MayApproveRule(ctx, env, login, rule)
			return d.Allowed, d.Why, err
		}))
		if cfg.GitHub.Deployments.Enabled {
			// Every apply, skipConfirmation included, as a deployment in GitHub's Environments view.
			gates = append(gates, github.NewDeployments(gh, cfg.GitHub.Deployments))
		}
	}
	if nt != nil {
		gates = append(gates, nt)
		defer func() {
			// Give what is queued a moment to go out; a shutdown never waits longer, nor past its grace.
			ctx, cancel := context.WithTimeout(stopping, notifyGrace)
			defer cancel()
			if err := nt.Close(ctx); err != nil {
				ntLog.Error(err, "stopping notifications")
			}
		}()
	}
	// The test and evaluation tasks of pipeline.yaml's sequences: Jobs,
	// http checks and PromQL evaluations after each rollout.
	// verification.allowAddresses opens what its requests are refused by default.
	vopts, err := wire.VerifyOptions(cfg.Verification)
	if err != nil {
		return err
	}
	vf, err := verify.New(vopts...)
	if err != nil {
		return err
	}
	// The Environment resources, written by each environment's worker from the daemon's view of it, and
	// their Events, which hear every plan, outcome and sequence step as a gate and a listener.
	var view envresource.ViewFunc
	var envEvents *envresource.Events
	// The DORA metrics, counted by each environment's worker after it recorded (not with --once: its metrics
	// are served by nobody, and a deploy counted there would never be counted again).
	counter := &doraCounter{log: log.WithName("dora")}
	if !rf.once {
		er, err := environmentResources(cmd.Context(), b, &view, log.WithName("envresource"))
		if err != nil {
			return err
		}
		defer er.stop()
		hooks := []daemon.RecordHook{counter.hook}
		if er.hook != nil {
			hooks = append(hooks, er.hook)
		}
		opts = append(opts, daemon.WithRecordHook(recordHooks(hooks...)))
		if er.events != nil {
			gates, envEvents = append(gates, er.events), er.events
		}
	}
	opts = append(opts, daemon.WithGate(approval.Gates(gates...)), daemon.WithVerifier(vf))
	// An automatic rollback of a failed rollout opens the rollback pull request and places the hold (with
	// github.app); rb is built below, before the daemon runs.
	var rb *rollback.Rollbacker
	if gh != nil {
		opts = append(opts, daemon.WithRollbackHook(func(ctx context.Context, env string, id int64, cause string) error {
			if rb == nil {
				return errors.New("no rollback pull request: the lock service is off (locks)")
			}
			return rb.Automatic(ctx, env, id, cause)
		}))
	}
	// ... and every step of each environment's sequence.
	switch {
	case nt != nil && envEvents != nil:
		opts = append(opts, daemon.WithSequenceListener(sequence.Listeners(nt, envEvents)))
	case nt != nil:
		opts = append(opts, daemon.WithSequenceListener(nt))
	case envEvents != nil:
		opts = append(opts, daemon.WithSequenceListener(envEvents))
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		return err
	}
	d, err := daemon.New(cfg, append(parts, opts...)...)
	if err != nil {
		return err
	}
	if !rf.once {
		if err := counter.start(b, d); err != nil {
			return err
		}
	}
	view = func(ctx context.Context, env string) (*status.Environment, status.Phase, error) {
		v, err := d.Environment(ctx, env)
		if err != nil {
			return nil, "", err
		}
		return v, v.Phase, nil
	}
	// stagehand_state_writes_total{environment,result} and stagehand_registry_requests_total{code}, beside the
	// daemon's metrics.
	st, err := b.Store()
	if err != nil {
		return err
	}
	if err := registerAll(d.Metrics().Registry, append(st.Collectors(), b.Collectors()...)); err != nil {
		return fmt.Errorf("registering state and registry metrics: %w", err)
	}
	if nt != nil {
		// stagehand_notifications_total{sink,result}, beside the daemon's metrics.
		if err := registerAll(d.Metrics().Registry, nt.Collectors()); err != nil {
			return fmt.Errorf("registering notification metrics: %w", err)
		}
	}
	recv, err := b.Webhook()
	if err != nil {
		return err
	}
	if gh != nil {
		if recv == nil {
			return fmt.Errorf("github.app is set but github.webhookSecretFile is not: check-run approvals arrive as webhooks")
		}
		// Rollback pull requests through the App, holds in the lock service.
		if rb, err = newRollbacker(cfg, gh, d); err != nil {
			return err
		}
		previewer := preview.New(cfg.Source.CacheDir, cfg.EnvironmentNames(), d.Plan, b.BranchSource)
		ghLog := log.WithName("github")
		// PR previews are computed by a worker after their webhook was answered, never on the apply path.
		hopts := []github.Option{
			github.OnDecisionError(func(err error) { ghLog.Error(err, "check-run decision") }),
			github.OnPreviewError(func(err error) { ghLog.Error(err, "PR preview") }),
		}
		if n := cfg.GitHub.Previews.Workers; n > 0 {
			hopts = append(hopts, github.WithPreviewWorkers(n))
		}
		if t := cfg.GitHub.Previews.Timeout.Duration; t > 0 {
			hopts = append(hopts, github.WithPreviewTimeout(t))
		}
		if rb != nil {
			// Merging a rollback pull request ends its hold.
			hopts = append(hopts, github.OnMerged(rb.Merged))
		}
		h, err := github.NewHandler(gh, d, cfg.Source.Branch, append(hopts, github.WithPreviewer(previewer))...)
		if err != nil {
			return err
		}
		h.Register(recv)
		// stagehand_github_requests_total{code} and the rate-limit gauges, beside the daemon's metrics.
		if err := registerAll(d.Metrics().Registry, append(gh.Collectors(), h.Collectors()...)); err != nil {
			return fmt.Errorf("registering GitHub metrics: %w", err)
		}
		// Approvals clicked on GitHub finish after their webhook was answered; previews still running are
		// cancelled.
		defer func() {
			h.StopPreviews()
			h.Wait()
		}()
	}
	if rf.once {
		if err := d.Once(cmd.Context()); err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "Error:", err)
			return command.Exit(1, nil)
		}
		fmt.Fprintln(cmd.OutOrStdout(), "all environments reconciled")
		return nil
	}
	// The DORA figures of the API and the page, and what each promotion waits for, computed once for both.
	reporter, err := doraReporter(b, d)
	if err != nil {
		return err
	}
	waits := promotions(b, d)
	page, err := webPage(b, d, ui.WithDORA(reporter), ui.WithPromotions(waits))
	if err != nil {
		return err
	}
	authn, err := b.Authenticator()
	if err != nil {
		return err
	}
	apiOpts := []api.Option{api.WithAuthenticator(authn), api.WithMetrics(d.Metrics().Registry), api.WithWebhook(recv),
		api.WithLog(log.WithName("api")), api.WithLimits(cfg.Server.HTTP.Limits()), api.WithShutdownGrace(grace / 2),
		api.WithDORA(reporter), api.WithStages(stageOrder(d, cfg.Source.Root)), api.WithPromotions(waits),
		api.WithTracing(tp)}
	if page != nil {
		apiOpts = append(apiOpts, api.WithUI(page, ui.Patterns()...))
	}
	if rb != nil {
		apiOpts = append(apiOpts, api.WithRollback(rb))
	}
	srv, err := api.New(d, apiOpts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s (server.listen): %w", cfg.Server.Listen, err)
	}
	log.WithName("reconciler").Info("serving HTTP API", "address", ln.Addr().String())
	return srv.ServeWhile(cmd.Context(), ln, d.Run)
}

// newRollbacker builds the rollbacker of `reconciler run` over the
// manifests repository of github.owner/repo; nil without a lock service.
func newRollbacker(cfg *config.Config, gh *github.Client, d *daemon.Daemon) (*rollback.Rollbacker, error) {
	svc := d.LockService()
	if svc == nil {
		return nil, nil
	}
	bot, err := prbot.New(gh.REST(), cfg.GitHub.Owner, cfg.GitHub.Repo, prbot.WithBase(cfg.Source.Branch), prbot.WithRoot(cfg.Source.Root),
		prbot.WithWebURL(prbot.WebRoot(cfg.GitHub.APIURL)), prbot.WithManifestOptions(wire.ManifestOptions(cfg.Manifest)...), prbot.WithClock(gh.Now))
	if err != nil {
		return nil, fmt.Errorf("configuring rollbacks: %w", err)
	}
	lockPaths := make(map[string]string, len(cfg.Environments))
	for name, env := range cfg.Environments {
		lockPaths[name] = env.LockPath
	}
	return rollback.New(rollback.Parts{Bot: bot, Locks: svc, LockPaths: lockPaths, Reconciler: d})
}

// afterGrace returns a context that ends grace after ctx ends: what is
// left of a stop's grace (server.shutdownGrace) for the steps after it.
func afterGrace(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	g, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(g, func() { t.Stop() })
	})
	return g, func() { stop(); cancel() }
}

// notifyGrace is how long an exiting reconciler waits for queued
// notifications to be sent.
const notifyGrace = 15 * time.Second

// registerAll registers every collector in reg.
func registerAll(reg prometheus.Registerer, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
