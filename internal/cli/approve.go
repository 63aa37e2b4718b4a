package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// decisionFlags are the flags approve and reject share.
type decisionFlags struct {
	server, env, planHash, tokenFile, approver, reason string
	wait, yes                                          bool
	timeout                                            time.Duration
}

// terminalKey overrides, in tests, whether the command's input is a terminal.
type terminalKey struct{}

// isTerminal reports whether in is a terminal a person can answer on.
func isTerminal(ctx context.Context, in io.Reader) bool {
	if v, ok := ctx.Value(terminalKey{}).(bool); ok {
		return v
	}
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newApproveCommand() *cobra.Command { return newDecisionCommand(true) }
func newRejectCommand() *cobra.Command  { return newDecisionCommand(false) }

// newDecisionCommand is `reconciler approve|reject --server URL --env ENV --plan-hash H`.
func newDecisionCommand(approve bool) *cobra.Command {
	var f decisionFlags
	verb, short := "reject", "Reject the plan pending in an environment"
	if approve {
		verb, short = "approve", "Approve the plan pending in an environment, which deploys it"
	}
	cmd := &cobra.Command{
		Use:   verb + " --server URL --env ENV [--plan-hash H | --yes]",
		Short: short,
		Long: short + `.
The plan hash binds the decision to exactly the changes you reviewed: if the
pending plan is another one now (a newer commit, a changed cluster), the
reconciler refuses and says what is pending instead. Without --plan-hash the
pending plan is fetched and printed with its hash, and you are asked to
confirm on the terminal; scripts pass --plan-hash (or --yes: whatever is
pending now), and without a terminal one of them is required. Who decides is
who the token says: it comes from --token-file, else $STAGEHAND_TOKEN, else
$GITHUB_TOKEN, else gh auth token, else the token reconciler login saved; the
server from --server or $STAGEHAND_SERVER.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, approve) },
	}
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.StringVar(&f.planHash, "plan-hash", "", "planHash of the plan you reviewed (default: show the pending plan and ask)")
	fl.BoolVar(&f.yes, "yes", false, "decide on the plan pending now without asking (for scripts; --plan-hash is safer)")
	fl.StringVar(&f.approver, "as", "", "assert who you are: the server refuses the decision unless your token is this principal (who decides always comes from the token)")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the server (and, with --wait, for the apply)")
	if approve {
		fl.BoolVar(&f.wait, "wait", false, "wait until the apply has finished and print its result (exit 1 if it failed), or until it waits for its release approval")
	} else {
		fl.StringVar(&f.reason, "reason", "", "why, for the history")
	}
	return cmd
}

func (f *decisionFlags) run(cmd *cobra.Command, approve bool) error {
	if _, err := command.APIServer(f.server); err != nil {
		return err
	}
	switch {
	case f.env == "":
		return command.Usagef("--env is required")
	case f.planHash != "" && f.yes:
		return command.Usagef("--plan-hash and --yes are mutually exclusive")
	}
	c, err := command.APIClient(f.server, f.tokenFile, f.timeout)
	if err != nil {
		return err
	}
	// Who decides is who the token says; --as only asserts it (the server refuses another name).
	who := f.approver
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	verb := "reject"
	if approve {
		verb = "approve"
	}
	if f.planHash == "" {
		if err := f.confirm(ctx, cmd, c, verb); err != nil {
			return err
		}
	}
	decide := c.Reject
	if approve {
		decide = c.Approve
	}
	resp, err := decide(ctx, f.env, api.DecisionRequest{PlanHash: f.planHash, Approver: who, Reason: f.reason})
	if err != nil {
		return command.Refused(cmd, verb, err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), resp.Message)
	// A plan that needs more approvers (approvals.required) is not applied yet: nothing to wait for here.
	if !approve || !f.wait || resp.Status == "pending" {
		return nil
	}
	return f.waitApplied(ctx, cmd, c)
}

// waitApplied polls the history until the approved plan has a result.
func (f *decisionFlags) waitApplied(ctx context.Context, cmd *cobra.Command, c *api.Client) error {
	for {
		history, err := c.History(ctx, f.env)
		if err != nil {
			return fmt.Errorf("reading history: %w", err)
		}
		for _, e := range history {
			if e.PlanHash != f.planHash || e.Result == approval.ResultRejected || e.Result == approval.ResultInterrupted {
				continue
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: revision %s %s in %s\n", f.env, e.Revision, e.Result,
				e.Finished.Sub(e.Started).Round(time.Millisecond))
			if e.Result != approval.ResultSucceeded {
				fmt.Fprintln(cmd.ErrOrStderr(), "Error:", e.Message)
				return command.Exit(1, nil)
			}
			return nil
		}
		// Applied and verified, the plan may wait for its release approval
		// (an approval after the deployment in its sequence): it has no
		// history entry before a person decides, so that is the end here.
		if rev, ok, err := f.releaseWaiting(ctx, c); err != nil {
			return err
		} else if ok {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: revision %s deployed and verified; waiting for its release approval "+
				"(reconciler approve --env %s --plan-hash %s releases it)\n", f.env, rev, f.env, f.planHash)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the apply of %s: %w", f.planHash, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// releaseWaiting reports whether the environment's pending plan is the
// release of the plan approved (f.planHash), and its revision.
func (f *decisionFlags) releaseWaiting(ctx context.Context, c *api.Client) (string, bool, error) {
	v, err := c.Environment(ctx, f.env)
	if err != nil {
		return "", false, fmt.Errorf("reading environment %s: %w", f.env, err)
	}
	if p := v.Pending; p != nil && p.Release && p.PlanHash == f.planHash {
		return p.Revision, true, nil
	}
	return "", false, nil
}

// confirm fetches the plan pending in the environment, prints it with its
// hash and, unless --yes, asks on the terminal; it sets f.planHash to the
// plan shown, so the decision is refused if another plan is pending by then.
func (f *decisionFlags) confirm(ctx context.Context, cmd *cobra.Command, c *api.Client, verb string) error {
	if !f.yes && !isTerminal(ctx, cmd.InOrStdin()) {
		return command.Usagef("no terminal to confirm on: pass --plan-hash with the hash of the plan you reviewed, or --yes")
	}
	v, err := c.Environment(ctx, f.env)
	if err != nil {
		return command.Refused(cmd, "reading "+f.env, err)
	}
	if v.Pending == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: nothing is pending in %s\n", f.env)
		return command.Exit(1, nil)
	}
	var plan reconcile.Plan
	if err := json.Unmarshal(v.Pending.Plan, &plan); err != nil {
		return fmt.Errorf("decoding the pending plan of %s: %w", f.env, err)
	}
	out := cmd.OutOrStdout()
	printPlan(out, &plan)
	f.planHash = v.Pending.PlanHash
	if f.yes {
		return nil
	}
	fmt.Fprintf(out, "\n%s plan %s for %s at %s? [y/N] ", strings.ToUpper(verb[:1])+verb[1:], f.planHash, f.env, v.Pending.Revision)
	answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "Not "+map[string]string{"approve": "approved", "reject": "rejected"}[verb]+": nothing was changed.")
	return command.Exit(1, nil)
}
