package authoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// newPolicyCommand is `reconciler policy`, whose one subcommand is `test`.
func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Try an environment's approval rules",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPolicyTestCommand())
	return cmd
}

// policyTestFlags are the flags of `reconciler policy test`.
type policyTestFlags struct {
	config, env, plan, as, now, at, output string
	authors, files, trailers               []string
}

// newPolicyTestCommand is `reconciler policy test`: the environment's rules over a plan file, and what
// an approval by --as would come to.
func newPolicyTestCommand() *cobra.Command {
	var f policyTestFlags
	cmd := &cobra.Command{
		Use:   "test --config FILE --env ENV --plan plan.json --as KIND:NAME [--authors a,b] [--files f,g] [--trailer K=V] [--at TIME] [-o json]",
		Short: "Explain which approval rules apply to a plan, whether an approval would count, and the deploy windows",
		Long: "Reads a plan written by `reconciler plan -o json`, evaluates the environment's approvals.rules over it " +
			"(on this host's clock, or --at), and says which rules applied, the requirement they make together, " +
			"whether --as approving would be counted, refused (and why) or need more approvers, and how the " +
			"environment's deploy windows judge at that time: which window allows or denies, and when they open " +
			"or close (a plan approved while they are closed waits). It reads no cluster: " +
			"history and locks are empty, and teams and minPermission are named, not asked of GitHub. Exit code 1 when " +
			"the approval would be refused.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPolicyTest(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "reconciler.yaml")
	cmd.Flags().StringVar(&f.env, "env", "", "environment whose rules to evaluate")
	cmd.Flags().StringVar(&f.plan, "plan", "", "plan file from `reconciler plan -o json` (- for stdin)")
	cmd.Flags().StringVar(&f.as, "as", "", "who approves, as kind:name (github:alice, token:ci)")
	cmd.Flags().StringSliceVar(&f.authors, "authors", nil, "revision.authors: the commit authors to deploy (GitHub logins or e-mail addresses)")
	cmd.Flags().StringSliceVar(&f.files, "files", nil, "revision.files: the repository paths the commits to deploy change")
	cmd.Flags().StringArrayVar(&f.trailers, "trailer", nil, "a revision.trailers entry of the commits to deploy, Key=Value (repeatable: Change-Risk=low)")
	cmd.Flags().StringVar(&f.at, "at", "", "the time to judge the rules and the windows at, RFC 3339 (default: now)")
	cmd.Flags().StringVar(&f.now, "now", "", "the same as --at")
	_ = cmd.Flags().MarkDeprecated("now", "use --at")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "text or json")
	return cmd
}

// policyReport is `reconciler policy test -o json`.
type policyReport struct {
	Environment string             `json:"environment"`
	PlanHash    string             `json:"planHash"`
	Approver    string             `json:"approver"`
	Rules       []policy.Outcome   `json:"rules"`
	Requirement policy.Requirement `json:"requirement"`
	// Required, ForbidAuthors and Automation are the environment's policy combined with the requirement.
	Required      int  `json:"required"`
	ForbidAuthors bool `json:"forbidAuthors"`
	Automation    bool `json:"automationAllowed"`
	// Decision is counted (the plan may be applied), more (counted; more approvers must approve) or refused.
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// At is the time judged; Windows is how the environment's deploy windows judge then.
	At      time.Time          `json:"at"`
	Windows policy.Explanation `json:"windows"`
}

func runPolicyTest(ctx context.Context, w io.Writer, f policyTestFlags) error {
	switch {
	case f.config == "" || f.env == "" || f.plan == "" || f.as == "":
		return command.Usagef("--config, --env, --plan and --as are required")
	case f.output != "text" && f.output != "json":
		return command.Usagef("invalid --output %q: expected text or json", f.output)
	}
	who, err := identity.ParseTyped(f.as)
	if err != nil {
		return command.Usagef("--as: %v", err)
	}
	now := time.Now()
	at := f.at
	switch {
	case f.at != "" && f.now != "":
		return command.Usagef("--at and --now are the same flag: give one")
	case f.now != "":
		at = f.now
	}
	if at != "" {
		if now, err = time.Parse(time.RFC3339, at); err != nil {
			return command.Usagef("--at %q: want RFC 3339, e.g. 2026-12-24T16:00:00Z", at)
		}
	}
	trailers, err := parseTrailers(f.trailers)
	if err != nil {
		return err
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return err
	}
	if _, ok := cfg.Environments[f.env]; !ok {
		return command.Usagef("--env %q: not an environment of %s (%s)", f.env, f.config, strings.Join(cfg.EnvironmentNames(), ", "))
	}
	plan, err := readPlanFile(f.plan)
	if err != nil {
		return err
	}
	base := cfg.ApprovalPolicy(f.env)
	set, err := base.RuleSet()
	if err != nil {
		return fmt.Errorf("environments.%s.approvals.rules: %w", f.env, err)
	}
	cal, err := policy.NewCalendar(cfg.Environments[f.env].Windows)
	if err != nil {
		return fmt.Errorf("environments.%s.windows: %w", f.env, err)
	}
	in := policy.Input{Plan: policy.FromPlan(plan), Now: now,
		Revision: policy.Revision{SHA: plan.Revision, Authors: f.authors, Files: f.files, Trailers: trailers}}
	req, outcomes, evalErr := set.Evaluate(ctx, in)
	r := policyReport{Environment: f.env, PlanHash: plan.PlanHash, Approver: who.String(), Rules: outcomes, Requirement: req,
		At: now.UTC(), Windows: cal.Explain(now)}
	eff := base.With(req)
	r.Required, r.ForbidAuthors, r.Automation = eff.Required, eff.ForbidAuthors, eff.AutomationAllowed()
	p := identity.Principal{ID: who}
	switch {
	case evalErr != nil:
		r.Decision, r.Reason = "refused", evalErr.Error()
	case p.Automation() && !eff.AutomationAllowed():
		r.Decision, r.Reason = "refused", fmt.Sprintf("%s acts for no person, and approvals.automation is deny for this plan (required %d, four-eyes %v)", who, eff.Required, eff.ForbidAuthors)
	case eff.ForbidAuthors && authoredBy(who, f.authors):
		r.Decision, r.Reason = "refused", fmt.Sprintf("four-eyes: %s is among the authors of the commits to deploy", who)
	case req.Restricts() && p.Automation():
		r.Decision, r.Reason = "refused", fmt.Sprintf("%s acts for no person, and %s", who, restriction(req))
	case eff.Required > 1:
		r.Decision, r.Reason = "more", fmt.Sprintf("counted as 1 of %d approvals; %d more must approve", eff.Required, eff.Required-1)
	default:
		r.Decision, r.Reason = "counted", "the plan may be applied with this approval"
	}
	if r.Decision != "refused" && req.Restricts() {
		r.Reason += "; at approval, GitHub is asked that " + who.String() + " passes: " + restriction(req)
	}
	if r.Decision == "counted" && !r.Windows.Open {
		r.Reason += "; it waits for the deploy windows, which are " + r.Windows.String()
	}
	if f.output == "json" {
		if err := command.WriteJSON(w, r); err != nil {
			return err
		}
	} else {
		printPolicyReport(w, r)
	}
	if r.Decision == "refused" {
		return errors.New("")
	}
	return nil
}

// restriction says in words who a requirement lets approve.
func restriction(req policy.Requirement) string {
	var who []string
	if len(req.Teams) > 0 {
		who = append(who, "membership of "+strings.Join(req.Teams, " or "))
	}
	if req.MinPermission != "" {
		who = append(who, req.MinPermission+" permission or higher on the manifests repository")
	}
	return "the rules " + appliedNames(req) + " need " + strings.Join(who, ", or ")
}

func appliedNames(req policy.Requirement) string {
	names := make([]string, len(req.Applied))
	for i, a := range req.Applied {
		names[i] = a.Rule
	}
	return strings.Join(names, ", ")
}

// authoredBy reports whether who's name is among authors, as four-eyes matches it (a login, or an
// e-mail address whose local part is the name).
func authoredBy(who identity.ID, authors []string) bool {
	for _, a := range authors {
		local, _, _ := strings.Cut(a, "@")
		if strings.EqualFold(a, who.Name) || strings.EqualFold(local, who.Name) {
			return true
		}
	}
	return false
}

func printPolicyReport(w io.Writer, r policyReport) {
	fmt.Fprintf(w, "Environment %s, plan %s, approval by %s\n\nRules:\n", r.Environment, r.PlanHash, r.Approver)
	if len(r.Rules) == 0 {
		fmt.Fprintln(w, "  (none: the environment's approvals policy alone)")
	}
	msgs := map[string]string{}
	for _, a := range r.Requirement.Applied {
		msgs[a.Rule] = a.Message
	}
	for _, o := range r.Rules {
		switch {
		case o.Error != "":
			fmt.Fprintf(w, "  %-20s error     %s\n", o.Rule, o.Error)
		case o.Applied:
			fmt.Fprintf(w, "  %-20s applies   %s\n", o.Rule, msgs[o.Rule])
		default:
			fmt.Fprintf(w, "  %-20s -\n", o.Rule)
		}
	}
	fmt.Fprintf(w, "\nRequirement: %d distinct approver(s)", r.Required)
	if r.ForbidAuthors {
		fmt.Fprint(w, ", four-eyes")
	}
	if r.Requirement.Restricts() {
		fmt.Fprint(w, "; "+restriction(r.Requirement))
	}
	fmt.Fprintf(w, "\n\nWindows at %s: %s\n", r.At.Format(time.RFC3339), r.Windows)
	fmt.Fprintf(w, "\n%s: %s: %s\n", r.Approver, r.Decision, r.Reason)
}

// parseTrailers reads --trailer Key=Value flags into revision.trailers, keys in canonical case as git
// trailers are read (change-risk is Change-Risk).
func parseTrailers(flags []string) (map[string][]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		ts := gitsource.Trailers("x\n\n" + k + ": " + v)
		if !ok || len(ts) != 1 || strings.TrimSpace(v) == "" {
			return nil, command.Usagef("--trailer %q: want Key=Value, e.g. Change-Risk=low", kv)
		}
		out[ts[0].Key] = append(out[ts[0].Key], ts[0].Value)
	}
	return out, nil
}

// readPlanFile reads a plan written by `reconciler plan -o json` from path (- for stdin).
func readPlanFile(path string) (*reconcile.Plan, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading plan %s: %w", path, err)
	}
	var p reconcile.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("reading plan %s: want the output of reconciler plan -o json: %w", path, err)
	}
	return &p, nil
}
