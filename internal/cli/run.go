package cli

import (
	"fmt"
	"os"

	fluxle "github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	ghapp "github.com/stagehand-gitops/stagehand/internal/github"
)

// newRunCommand is `reconciler run --config FILE [--once]`.
func newRunCommand() *cobra.Command {
	var (
		configPath string
		once       bool
		identity   string
		logOpts    logger.Options
		le         fluxle.Options
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usagef("--config is required")
			}
			cfg, err := config.Load(configPath)
			if err != nil {
				return err
			}
			log := logger.NewLogger(logOpts)
			logger.SetLogger(log)
			if once {
				le.Enable = false
			}
			opts := []daemon.Option{daemon.WithLogger(log.WithName("reconciler")), daemon.WithLeaderElection(le)}
			if identity == "" {
				identity = os.Getenv("POD_NAME")
			}
			if identity != "" {
				opts = append(opts, daemon.WithIdentity(identity))
			}
			var gh *ghapp.Client
			if cfg.GitHub.App != nil && !once {
				if gh, err = ghapp.New(cfg.GitHub); err != nil {
					return err
				}
				// Approve on GitHub (check run buttons) or over the API/CLI.
				opts = append(opts, daemon.WithGate(daemon.Gates(daemon.API(), ghapp.NewGate(gh))))
			}
			d, err := daemon.New(cfg, opts...)
			if err != nil {
				return err
			}
			if gh != nil {
				if d.Webhook() == nil {
					return fmt.Errorf("github.app is set but github.webhookSecretFile is not: check-run approvals arrive as webhooks")
				}
				preview := ghapp.NewBranchPreviewer(cfg.Source, cfg.EnvironmentNames(), d.Plan)
				ghLog := log.WithName("github")
				h := ghapp.NewHandler(gh, ghapp.FromDaemon(d), preview, cfg.Source.Branch,
					ghapp.OnDecisionError(func(err error) { ghLog.Error(err, "check-run decision") }))
				h.Register(d.Webhook())
				// Approvals clicked on GitHub finish after their webhook was answered.
				defer h.Wait()
			}
			if once {
				if err := d.Once(cmd.Context()); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "Error:", err)
					return exitCode(1, nil)
				}
				fmt.Fprintln(cmd.OutOrStdout(), "all environments reconciled")
				return nil
			}
			return d.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "reconciler.yaml (required)")
	f.BoolVar(&once, "once", false, "one pass over every environment, then exit (non-zero if anything failed)")
	f.StringVar(&identity, "identity", "", "name of this replica in the leader Lease (default $POD_NAME, else host name and a random suffix)")
	logOpts.BindFlags(f)
	le.BindFlags(f)
	// Two replicas must be safe by default: elect a leader unless told otherwise.
	if fl := f.Lookup("enable-leader-election"); fl != nil {
		fl.DefValue = "true"
		_ = fl.Value.Set("true")
	}
	return cmd
}
