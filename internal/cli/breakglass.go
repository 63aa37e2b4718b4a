package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
)

// breakGlassFlags are the flags of reconciler break-glass.
type breakGlassFlags struct {
	server, env, planHash, tokenFile, reason string
	timeout                                  time.Duration
}

// newBreakGlassCommand is `reconciler break-glass --env ENV --plan-hash H --reason WHY`.
func newBreakGlassCommand() *cobra.Command {
	var f breakGlassFlags
	cmd := &cobra.Command{
		Use:   "break-glass --server URL --env ENV --plan-hash H --reason WHY",
		Short: "Let the plan waiting in an environment through its closed deploy windows, once",
		Long: `Let the plan waiting in an environment through its closed deploy windows (a
freeze), once, with a reason: POST /api/v1/environments/{env}/break-glass. The
plan is the one pending approval, or in a skipConfirmation environment the plan
the windows deferred (reconciler status shows its planHash). It does not
approve: a pending plan still needs its approvals, and goes out at once if it
has them, else as soon as it has them; the next plan waits for the windows
again. Who may is environments.<env>.windows.breakGlass (by default a caller
with lock:admin or approve:<env>); who breaks the glass is who the token says.
The reason is kept in the history and sent with the Event and notifications.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.StringVar(&f.planHash, "plan-hash", "", "planHash of the plan to let through, as you reviewed it (required)")
	fl.StringVar(&f.reason, "reason", "", "why it must go out through the freeze: one line, at most 500 characters (required)")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for the server")
	return cmd
}

func (f *breakGlassFlags) run(cmd *cobra.Command) error {
	if _, err := command.APIServer(f.server); err != nil {
		return err
	}
	switch {
	case f.env == "":
		return command.Usagef("--env is required")
	case f.planHash == "":
		return command.Usagef("--plan-hash is required: the plan you reviewed (reconciler status --env %s shows it)", f.env)
	case f.reason == "":
		return command.Usagef("--reason is required: say why the plan must go out through the freeze")
	}
	c, err := command.APIClient(f.server, f.tokenFile, f.timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	resp, err := c.BreakGlass(ctx, f.env, api.BreakGlassRequest{PlanHash: f.planHash, Reason: f.reason})
	if err != nil {
		return command.Refused(cmd, "break the glass", err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), resp.Message)
	return nil
}
