package bot

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/prbot/promoter"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/internal/version"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

func newPrbotServeCommand() *cobra.Command {
	var (
		path string
		logs logger.Options
	)
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Evaluate promotions on webhooks, promotion windows and soak ends",
		Long: `Runs the promotion bot: verifies GitHub webhooks (push to the base branch, completed check runs such
as stagehand/<env>, commit statuses on promotion branches) and evaluates the promotions of pipeline.yaml
as they become possible, plus at each promotion window's cron firing, when a soak ends and every resync
interval. Point the repository's webhook (content type application/json, events push, check_run and
status) at http://<listen><webhookPath>.

The config file is strict YAML (unknown keys are errors); secrets come from files:

  github:
    apiURL: ""                  # GitHub Enterprise: https://ghe.example.com/api/v3 (empty: api.github.com)
    owner: acme                 # the manifests repository (required)
    repo: manifests
    app: {appID: 1, installationID: 2, privateKeyFile: /secrets/app/private-key.pem}
    tokenFile: ""               # instead of app: a file holding a token
    webhookSecretFile: /secrets/webhook/secret   # required
  base: main                    # base branch
  root: .                       # directory holding environments/ and pipeline.yaml
  listen: ":8080"               # serves POST <webhookPath> and GET /healthz
  webhookPath: /webhook/github
  upstreamOwner: ""             # owner of upstream repositories for compare links (default github.owner)
  webURL: ""                    # web root for compare links (default: derived from apiURL)
  locks: {server: https://stagehand.example.com, tokenFile: /secrets/api/token}   # optional
  merge: {method: merge, requiredChecks: []}   # merge|squash|rebase; checks an auto-merge waits for
  historyDepth: 50              # commits looked back through for the earlier stage's success
  resync: 10m                   # re-evaluate everything this often (0s: events only)
  manifest: {allowUnknownKeys: false}   # as in reconciler.yaml: unknown keys in manifest files are errors
  oidc:                         # optional: keyless bumps from CI, POST /api/v1/bumps (docs/how-to/keyless-bumps.md)
    issuers:
      - {url: https://token.actions.githubusercontent.com, audience: stagehand, claims: github, namespaces: [acme]}
      - {url: https://gitlab.com, audience: stagehand, claims: gitlab, namespaces: [acme-group]}
    keyRefresh: 30s             # least time between key set refetches caused by unknown keys
    caFile: ""                  # PEM bundle trusted for the issuers' TLS besides the system roots

With oidc set, upstream CI posts bumps with its OIDC ID token (prbot bump --via) and may bump only the file
its repository owns, in stages of pipeline.yaml with acceptsBumps: true.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return command.Usagef("--config is required")
			}
			c, err := config.LoadPrbot(path)
			if err != nil {
				return err
			}
			d, err := prbotDepsFrom(cmd.Context())
			if err != nil {
				return err
			}
			return runServe(cmd.Context(), c, command.QuietOnStop(cmd.Context(), logger.NewLogger(logs)), d)
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "prbot serve configuration file (required)")
	logs.BindFlags(cmd.Flags())
	return cmd
}

// serveFlags are the one-shot commands' flags that prbot serve's
// configuration amounts to.
func serveFlags(c *config.Prbot) botFlags {
	f := botFlags{repo: c.GitHub.Owner + "/" + c.GitHub.Repo, githubURL: c.GitHub.APIURL, webURL: c.WebURL, tokenFile: c.GitHub.TokenFile,
		base: c.Base, root: c.Root, upstreamOwner: c.UpstreamOwner, output: "text", allowUnknownKeys: c.Manifest.AllowUnknownKeys}
	if a := c.GitHub.App; a != nil {
		f.appID, f.installationID, f.privateKeyFile = a.AppID, a.InstallationID, a.PrivateKeyFile
	}
	if c.Locks != nil {
		f.lockServer, f.lockTokenFile = c.Locks.Server, c.Locks.TokenFile
	}
	if f.githubURL == "" {
		f.githubURL = "https://api.github.com" // the config, not the environment, decides
	}
	return f
}

// serveLogger is what prbot serve logs through (fluxcd's runtime logger in the binary).
type serveLogger interface {
	Info(string, ...any)
	Error(error, string, ...any)
}

// runServe evaluates promotions and serves webhooks until ctx ends or
// an interrupt arrives, then shuts the HTTP server down.
func runServe(ctx context.Context, c *config.Prbot, log serveLogger, d prbotDeps) error {
	// Traces (tracing:, or the OTEL_* variables; off by default), flushed on the way out.
	tp, err := wire.Tracing(c.Tracing, "stagehand-prbot", tracing.WithLookupEnv(d.lookup),
		tracing.WithErrorHandler(func(err error) { log.Error(err, "traces not sent") }))
	if err != nil {
		return err
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), prbotShutdownGrace)
		defer cancel()
		if err := tp.Shutdown(flush); err != nil {
			log.Error(err, "flushing traces")
		}
	}()
	srv, handler, err := newServe(c, log, d, tp)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s (listen): %w", c.Listen, err)
	}
	// The limits of http (reconciler.yaml's server.http): the bump API extends its own request's
	// deadlines while a bump, and an auto-merge, runs.
	hs := httpserve.New(handler, c.HTTP.Limits())

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- srv.Run(ctx) }()
	go func() { errc <- httpserve.Serve(ctx, hs, ln, prbotShutdownGrace) }()
	log.Info("prbot serving", "listen", ln.Addr().String(), "webhook", c.WebhookPath, "repo", c.GitHub.Owner+"/"+c.GitHub.Repo, "base", c.Base)
	var first error
	got := 0
	select {
	case <-ctx.Done():
	case first = <-errc:
		got++
	}
	stop()
	for ; got < 2; got++ {
		if err := <-errc; first == nil {
			first = err
		}
	}
	return first
}

// prbotShutdownGrace is how long requests in progress may finish when
// prbot serve stops.
const prbotShutdownGrace = 10 * time.Second

// newServe builds prbot serve from its configuration: the bot, the
// promotion server logging each evaluation, and the HTTP handler with the
// verified webhook receiver, the keyless bump API (with oidc) and /healthz.
func newServe(c *config.Prbot, log serveLogger, d prbotDeps, tp *tracing.Provider) (*promoter.Server, http.Handler, error) {
	f := serveFlags(c)
	b, err := f.bot(d, prbot.WithMergeMethod(c.Merge.Method), prbot.WithRequiredChecks(c.Merge.RequiredChecks...), prbot.WithHistoryDepth(c.HistoryDepth),
		prbot.WithTracerProvider(tp.TracerProvider()))
	if err != nil {
		return nil, nil, err
	}
	secret, err := command.ReadSecret(c.GitHub.WebhookSecretFile, "github.webhookSecretFile")
	if err != nil {
		return nil, nil, err
	}
	srv, err := promoter.New(b, promoter.WithResync(c.Resync.Duration), promoter.WithResultHandler(func(r *prbot.PromoteResult, err error) {
		if err != nil {
			log.Error(err, "evaluating a promotion failed")
			return
		}
		log.Info("promotion evaluated", "from", r.From, "to", r.To, "action", r.Action, "pr", r.PR, "merged", r.Merged, "reason", r.Reason)
	}))
	if err != nil {
		return nil, nil, err
	}
	rcv, err := webhook.New(secret, webhook.WithErrorHandler(func(e webhook.Event, err error) {
		log.Error(err, "handling a webhook failed", "event", e.Type, "delivery", e.Delivery)
	}))
	if err != nil {
		return nil, nil, err
	}
	srv.Register(rcv)
	var bumps http.Handler
	if c.OIDC != nil {
		api, err := newBumpAPI(c, b, log, d.now)
		if err != nil {
			return nil, nil, err
		}
		bumps = api
	}
	mux := http.NewServeMux()
	for _, r := range prbotRoutes(c, rcv, bumps) {
		mux.Handle(r.pattern, r.handler)
	}
	return srv, tp.Handler(httpserve.Routes(mux)), nil
}

// prbotRoute is one route of prbot serve.
type prbotRoute struct {
	pattern string
	handler http.Handler
}

// prbotRoutes are prbot serve's routes: the webhook receiver, the keyless
// bump API (nil bumps: none), /healthz and /version. docs/reference/api.md documents each under
// "### prbot serve: METHOD /path" (TestPrbotRoutesDocumented).
func prbotRoutes(c *config.Prbot, webhook, bumps http.Handler) []prbotRoute {
	rs := []prbotRoute{{"POST " + c.WebhookPath, webhook}}
	if bumps != nil {
		rs = append(rs, prbotRoute{"POST " + keyless.BumpsPath, bumps})
	}
	return append(rs, prbotRoute{"GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })},
		prbotRoute{"GET /version", version.Handler(version.Get())})
}
