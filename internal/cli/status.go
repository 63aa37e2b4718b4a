package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// statusFlags are the flags of `reconciler status`.
type statusFlags struct {
	server, tokenFile, output string
	envs, services            []string
	timeout                   time.Duration
}

// stateSymbols pair each state with the web page's symbol, so the terminal
// reads the same without colour.
var stateSymbols = map[string]string{
	status.CellInSync: "✓", status.CellPending: "◔", status.CellRolling: "↻", status.CellOutOfSync: "≠",
	status.CellBlocked: "⊘", status.CellProblem: "⚠", status.CellFailed: "✗", status.CellUnknown: "?",
}

// newStatusCommand is `reconciler status [--env E] [--service S] [-o text|wide|json]`.
func newStatusCommand() *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status --server URL [--env E]... [--service S]... [-o text|wide|json]",
		Short: "Show every service in every environment: version and state (the web page's overview)",
		Long: `Show the matrix of services × environments that the web page shows, the
environments in pipeline.yaml's stage order: per environment its lifecycle phase (Idle, AwaitingApproval, Deferred, Applying, Verifying,
AwaitingRelease, RollingBack, Failed); per cell the version and state
(✓ in sync, ◔ pending approval, ↻ rolling out, ≠ out of sync, ⊘ blocked by a
lock, ⚠ problem, ✗ failed, ? unknown); then each environment's pending plan,
apply in flight, locks and resolve error; then, between adjacent stages, what
the next promotion waits for ("staging → prod: web soaking: …").
-o wide prints one line per service and target with the live and desired
images and what blocks them; -o json the matrix as GET /api/v1/matrix answers.
--env and --service (repeatable) narrow it down. The token comes from
--token-file or $STAGEHAND_TOKEN; the server from --server or $STAGEHAND_SERVER.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringSliceVar(&f.envs, "env", nil, "only these environments (repeatable)")
	fl.StringSliceVar(&f.services, "service", nil, "only these services (repeatable)")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text, wide or json")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the server")
	return cmd
}

func (f *statusFlags) run(cmd *cobra.Command) error {
	switch {
	case f.output != "text" && f.output != "wide" && f.output != "json":
		return command.Usagef("--output %q: want text, wide or json", f.output)
	}
	client, err := command.APIClient(f.server, f.tokenFile, f.timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	got, err := client.Matrix(ctx)
	if err != nil {
		return command.Refused(cmd, "reading the environments", err)
	}
	m, err := f.narrow(*got)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		return writeIndented(out, m)
	case "wide":
		return printWide(out, m)
	}
	return printMatrix(out, m)
}

// narrow keeps the environments and services asked for, and fails naming
// those that do not exist.
func (f *statusFlags) narrow(m status.Matrix) (status.Matrix, error) {
	var names, services []string
	for _, e := range m.Environments {
		names = append(names, e.Name)
	}
	for _, r := range m.Services {
		services = append(services, r.Service)
	}
	for _, e := range f.envs {
		if !slices.Contains(names, e) {
			return m, command.Usagef("--env %q: no such environment; configured: %s", e, strings.Join(names, ", "))
		}
	}
	for _, s := range f.services {
		if !slices.Contains(services, s) {
			return m, command.Usagef("--service %q: in no environment; services: %s", s, strings.Join(services, ", "))
		}
	}
	keep := make([]bool, len(m.Environments))
	out := status.Matrix{Services: []status.MatrixRow{}}
	for i, e := range m.Environments {
		if keep[i] = len(f.envs) == 0 || slices.Contains(f.envs, e.Name); keep[i] {
			out.Environments = append(out.Environments, e)
		}
	}
	for _, r := range m.Services {
		if len(f.services) > 0 && !slices.Contains(f.services, r.Service) {
			continue
		}
		row := status.MatrixRow{Service: r.Service}
		present := false
		for i, c := range r.Cells {
			if keep[i] {
				row.Cells = append(row.Cells, c)
				present = present || c != nil
			}
		}
		if present {
			out.Services = append(out.Services, row)
		}
	}
	// A promotion into or out of an environment kept.
	for _, p := range m.Promotions {
		if len(f.envs) == 0 || slices.Contains(f.envs, p.From) || slices.Contains(f.envs, p.To) {
			out.Promotions = append(out.Promotions, p)
		}
	}
	return out, nil
}

// cellText is a cell in a few words: "✓ 2.0.0", "◔ pending 1.0.0 → 2.0.0".
func cellText(c *status.MatrixCell) string {
	if c == nil {
		return "-"
	}
	live, desired := c.Version, c.Version
	if len(c.Targets) > 0 {
		live, desired = c.Targets[0].Live, c.Targets[0].Desired
	}
	s := stateSymbols[c.State] + " "
	if c.State != status.CellInSync {
		s += c.State + " "
	}
	if live != desired && live != "" {
		return s + live + " → " + desired
	}
	return s + desired
}

func printMatrix(w io.Writer, m status.Matrix) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	head := []string{"SERVICE"}
	for _, e := range m.Environments {
		head = append(head, strings.ToUpper(e.Name))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	// Each environment's lifecycle phase under its name (a server older
	// than phases sends none: no line).
	phases := []string{"PHASE"}
	for _, e := range m.Environments {
		phases = append(phases, dash(string(e.Phase)))
	}
	if slices.ContainsFunc(m.Environments, func(e status.MatrixEnvironment) bool { return e.Phase != "" }) {
		fmt.Fprintln(tw, strings.Join(phases, "\t"))
	}
	for _, r := range m.Services {
		line := []string{r.Service}
		for _, c := range r.Cells {
			line = append(line, cellText(c))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range m.Environments {
		var notes []string
		if e.Error != "" {
			notes = append(notes, "⚠ cannot resolve: "+e.Error)
		}
		if e.Pending != "" {
			tally := ""
			if e.Required > 1 {
				tally = fmt.Sprintf(" (%d of %d approvals)", e.Approvals, e.Required)
			}
			what := "approval pending"
			if e.Release {
				what = "deployed; release approval pending"
			}
			notes = append(notes, fmt.Sprintf("◔ %s%s: revision %s, plan %s", what, tally, gitsource.ShortRevision(e.PendingRevision), e.Pending))
			for _, r := range e.Reasons {
				notes = append(notes, "  approval rule: "+r)
			}
		}
		if e.Deferred != "" {
			notes = append(notes, fmt.Sprintf("⏸ deferred (skipConfirmation): revision %s, plan %s", gitsource.ShortRevision(e.DeferredRevision), e.Deferred))
		}
		for _, wt := range e.Waiting {
			notes = append(notes, "⏸ "+wt)
		}
		if e.Rolling != "" {
			notes = append(notes, "↻ rolling out plan "+e.Rolling)
		}
		for _, l := range e.Locks {
			notes = append(notes, "⊘ locked: "+l)
		}
		if e.Unmanaged > 0 {
			notes = append(notes, fmt.Sprintf("%d unmanaged workloads", e.Unmanaged))
		}
		for _, n := range notes {
			if _, err := fmt.Fprintf(w, "%s: %s\n", e.Name, n); err != nil {
				return err
			}
		}
	}
	// Between adjacent stages, in stage order: what the next promotion waits for.
	for _, p := range m.Promotions {
		if _, err := fmt.Fprintln(w, p.String()); err != nil {
			return err
		}
	}
	return nil
}

func printWide(w io.Writer, m status.Matrix) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tENVIRONMENT\tTARGET\tSTATE\tLIVE\tDESIRED\tNOTES")
	for _, r := range m.Services {
		for i, c := range r.Cells {
			if c == nil {
				continue
			}
			for _, t := range c.Targets {
				state := stateSymbols[t.State] + " " + t.State
				if t.Drift {
					state += " (drift)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Service, m.Environments[i].Name, t.Target, state,
					dash(t.Live), dash(t.Desired), dash(strings.Join(t.Notes, "; ")))
			}
		}
	}
	return tw.Flush()
}
