package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// newApplyCommand is `reconciler apply`.
func newApplyCommand() *cobra.Command {
	var (
		f        planFlags
		planHash string
		yes      bool
	)
	cmd := &cobra.Command{
		Use:   "apply --config FILE --env ENV [--dir CHECKOUT] (--plan-hash H | --yes)",
		Short: "Apply an environment's plan and wait for the rollouts",
		Long: `Plan the environment again and apply it: only if the fresh planHash equals
--plan-hash (the plan a reviewer approved), or unconditionally with --yes.
Prints progress per workload while rollouts run; an Argo Rollouts Rollout
paused at a step is promoted, or waited for, as environments.<env>.rollouts.promote
says, as the daemon does. Exit 0 when every change the
manifest asks for was applied and rolled out; 1 when any workload failed, a
change was blocked by a lock or a service was kept back by a problem (the rest
is still applied), or on errors; 2 on usage errors; 3 when the plan no longer
matches --plan-hash (nothing is applied).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(args); err != nil {
				return err
			}
			if (planHash == "") == !yes {
				return command.Usagef("pass exactly one of --plan-hash H and --yes")
			}
			return runApply(cmd, &f, planHash)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&planHash, "plan-hash", "", "apply only if the plan still has this planHash")
	cmd.Flags().BoolVar(&yes, "yes", false, "apply whatever the plan is now, without a planHash")
	return cmd
}

// runApply applies the plan of f's environment if its hash is planHash
// (any hash when planHash is empty: --yes).
func runApply(cmd *cobra.Command, f *planFlags, planHash string) error {
	s, err := f.setup(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if planHash == "" {
		p, err := s.rec.Plan(ctx, s.req)
		if err != nil {
			return err
		}
		planHash = p.PlanHash
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	progress := out
	if f.output == "json" {
		progress = errOut // keep stdout one JSON document
	}
	// A Rollout paused at a step is promoted, or waited for, as the daemon
	// does for the environment; who runs the command approved the plan.
	promotion := reconcile.WithPromotion(daemon.PromotionOf(s.cfg.Environments[f.env]), author())
	res, err := s.rec.Apply(ctx, s.req, planHash, reconcile.WithProgress(printProgress(progress)), promotion)
	var stale *reconcile.StalePlanError
	if errors.As(err, &stale) {
		fmt.Fprintf(errOut, "%v\nNothing was applied. Review the new plan:\n", err)
		printPlan(errOut, stale.Plan)
		return command.Exit(3, nil)
	}
	if err != nil {
		return err
	}
	if f.output == "json" {
		if err := command.WriteJSON(out, res); err != nil {
			return err
		}
	} else {
		printResult(out, res)
	}
	if res.Failed() || len(res.Plan.Blocked) > 0 || len(res.Plan.Problems) > 0 {
		return command.Exit(1, nil) // what was not deployed is printed above
	}
	return nil
}

// printProgress writes one line per workload step: "a/ns Deployment/web: patched (app: x → y)".
// WithProgress calls it one step at a time.
func printProgress(w io.Writer) func(reconcile.Progress) {
	return func(p reconcile.Progress) {
		fmt.Fprintf(w, "%s/%s %s/%s: %s", p.Target, p.Namespace, p.Kind, p.Name, p.Phase)
		if p.Message != "" {
			fmt.Fprintf(w, " (%s)", p.Message)
		}
		fmt.Fprintln(w)
	}
}

// printResult summarises an apply.
func printResult(w io.Writer, r *reconcile.Result) {
	p := r.Plan
	if len(r.Workloads) == 0 {
		fmt.Fprintf(w, "Environment %s at revision %s: nothing to apply.\n", p.Environment, p.Revision)
	}
	count := map[reconcile.Outcome]int{}
	for _, wr := range r.Workloads {
		count[wr.Outcome]++
	}
	if len(r.Workloads) > 0 {
		fmt.Fprintf(w, "Environment %s at revision %s (planHash %s): %d workload(s): %d succeeded, %d failed, %d blocked",
			p.Environment, p.Revision, p.PlanHash, len(r.Workloads),
			count[reconcile.OutcomeSucceeded], count[reconcile.OutcomeFailed], count[reconcile.OutcomeBlocked])
		if n := count[reconcile.OutcomePatched]; n > 0 {
			fmt.Fprintf(w, ", %d patched without waiting", n)
		}
		if n := count[reconcile.OutcomeOnDelete]; n > 0 {
			fmt.Fprintf(w, ", %d patched whose pods change when deleted (updateStrategy OnDelete)", n)
		}
		fmt.Fprintln(w, ".")
		for _, wr := range r.Workloads {
			if wr.Outcome == reconcile.OutcomeFailed || wr.Outcome == reconcile.OutcomeBlocked {
				fmt.Fprintf(w, "  %s %s/%s %s/%s: %s\n", wr.Outcome, wr.Target, wr.Namespace, wr.Kind, wr.Name, wr.Message)
			}
		}
	}
	if len(p.Blocked) > 0 {
		fmt.Fprintf(w, "%d change(s) were blocked by locks at plan time and not applied.\n", len(p.Blocked))
	}
	if len(p.Problems) > 0 {
		fmt.Fprintf(w, "%d problem(s) kept services from being applied:\n", len(p.Problems))
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "  %s/%s: %s\n", pr.Target, pr.Service, pr.Message)
		}
	}
}
