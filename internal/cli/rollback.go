package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
)

// rollbackFlags are the flags of `reconciler rollback` and `reconciler release`.
type rollbackFlags struct {
	server, env, to, reason, tokenFile, as, output string
	now                                            bool
	timeout                                        time.Duration
}

func (f *rollbackFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.StringVar(&f.as, "as", "", "assert who you are: the server refuses unless your token is this principal (who asks always comes from the token)")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for the server")
}

// newRollbackCommand is `reconciler rollback --env ENV --to previous|ID|REVISION --reason TEXT`.
func newRollbackCommand() *cobra.Command {
	var f rollbackFlags
	cmd := &cobra.Command{
		Use:   "rollback --server URL --env ENV --to previous|ID|REVISION --reason TEXT [--now]",
		Short: "Open the pull request that puts an environment back on earlier versions, and hold the bots off it",
		Long: `Open (or update: one per environment) the rollback pull request of an environment in the
manifests repository, through the reconciler's GitHub App. It edits only the services whose
versions differ from the point rolled back to, in the files that define them today, and is titled
"Rollback ENV to <sha>: REASON". --to is "previous" (what ran before the newest successful apply),
a history entry id ("reconciler history" lists them) or a revision of the manifests repository.

It also places a hold on the environment: while it exists, "prbot bump" and "prbot promote"
neither open nor merge anything that moves the environment (they say why), and the reconciler
keeps applying what is merged. Merging the pull request ends the hold; so does
"reconciler release --env ENV". The change reaches the cluster once the pull request is merged
(and approved, as any plan of the environment).

With --now (incident mode) the reconciler also pins the rolled-back versions at once: it plans
them, approves the plan as --as (left pending for an approver when that is refused), applies
it, and keeps those versions, whatever git says of these services, until the pull request
merges or the hold is released; the status says "pinned by rollback #N".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.rollback(cmd) },
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.to, "to", "", "previous, a history entry id or a revision of the manifests repository (required)")
	fl.StringVar(&f.reason, "reason", "", "why; it titles the pull request (required)")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.BoolVar(&f.now, "now", false, "incident mode: also pin, approve and apply the rolled-back versions now, until the pull request merges")
	return cmd
}

// newReleaseCommand is `reconciler release --env ENV [--reason TEXT]`.
func newReleaseCommand() *cobra.Command {
	var f rollbackFlags
	cmd := &cobra.Command{
		Use:   "release --server URL --env ENV [--reason TEXT]",
		Short: "End the hold a rollback placed on an environment",
		Long: `End the hold a rollback placed on an environment without merging its pull request:
"prbot bump" and "prbot promote" may move the environment again. The rollback pull request, if
open, gets a comment saying who released the hold and why.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.release(cmd) },
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, for the rollback pull request")
	return cmd
}

// client checks the common flags and returns the API client.
func (f *rollbackFlags) client() (*api.Client, error) {
	c, err := command.APIClient(f.server, f.tokenFile, f.timeout)
	if err == nil && f.env == "" {
		err = command.Usagef("--env is required")
	}
	return c, err
}

func (f *rollbackFlags) rollback(cmd *cobra.Command) error {
	switch {
	case strings.TrimSpace(f.to) == "":
		return command.Usagef("--to is required: previous, a history entry id or a revision")
	case strings.TrimSpace(f.reason) == "":
		return command.Usagef("--reason is required: it titles the rollback pull request")
	case f.output != "text" && f.output != "json":
		return command.Usagef("--output %q: want text or json", f.output)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	res, err := c.Rollback(ctx, f.env, api.RollbackRequest{To: f.to, Reason: f.reason, RequestedBy: f.as, Now: f.now})
	if err != nil {
		return command.Refused(cmd, "rollback", err)
	}
	out := cmd.OutOrStdout()
	if f.output == "json" {
		return writeIndented(out, res)
	}
	fmt.Fprintln(out, res.Message)
	for _, s := range res.Services {
		fmt.Fprintln(out, "  "+s)
	}
	for _, s := range res.Skipped {
		fmt.Fprintln(out, "  not rolled back: "+s)
	}
	return nil
}

func (f *rollbackFlags) release(cmd *cobra.Command) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	res, err := c.Release(ctx, f.env, api.ReleaseRequest{Reason: f.reason, RequestedBy: f.as})
	if err != nil {
		return command.Refused(cmd, "release", err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), res.Message)
	return nil
}
