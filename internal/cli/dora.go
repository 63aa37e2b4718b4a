package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// doraFlags are the flags of `reconciler dora`.
type doraFlags struct {
	server, env, tokenFile, output, window string
	timeout                                time.Duration
}

// newDORACommand is `reconciler dora --server URL --env ENV [--window 30d] [-o json]`.
func newDORACommand() *cobra.Command {
	var f doraFlags
	cmd := &cobra.Command{
		Use:   "dora --server URL --env ENV [--window 30d] [-o text|json]",
		Short: "Show an environment's DORA figures over a window",
		Long: `Show an environment's four DORA figures over a window, computed from its history
(GET /api/v1/environments/{env}/dora): deployment frequency, lead time for
changes, change failure rate and time to restore, and how far back the history
reaches (it keeps the newest entries; Prometheus keeps the metrics for longer).
The token comes from --token-file or $STAGEHAND_TOKEN; the server from --server
or $STAGEHAND_SERVER.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.StringVar(&f.window, "window", "30d", "the window: a number of days (30d) or weeks (2w), or a duration (36h); at most 366d")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the server")
	return cmd
}

func (f *doraFlags) run(cmd *cobra.Command) error {
	switch {
	case f.env == "":
		return command.Usagef("--env is required")
	case f.output != "text" && f.output != "json":
		return command.Usagef("--output %q: want text or json", f.output)
	}
	if _, err := dora.ParseWindow(f.window); err != nil {
		return command.Usagef("--window: %v", err)
	}
	client, err := command.APIClient(f.server, f.tokenFile, f.timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	r, err := client.DORA(ctx, f.env, f.window)
	if err != nil {
		return command.Refused(cmd, "reading the DORA figures of "+f.env, err)
	}
	if f.output == "json" {
		return command.WriteJSON(cmd.OutOrStdout(), r)
	}
	return printDORA(cmd.OutOrStdout(), r)
}

// printDORA writes r for people.
func printDORA(w io.Writer, r *dora.Report) error {
	day := func(t time.Time) string { return t.UTC().Format(time.DateTime) }
	fmt.Fprintf(w, "%s, last %s: %s to %s\n", r.Environment, r.Window, day(r.From), day(r.To))
	switch {
	case r.HistoryFrom.IsZero():
		fmt.Fprintln(w, "no history yet")
	case !r.Complete:
		fmt.Fprintf(w, "the history reaches back only to %s: the figures cover %s to %s\n", day(r.HistoryFrom), day(r.HistoryFrom), day(r.To))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "deploys\t%d (%d succeeded, %d failed, %d rolled back)\n", r.Deploys, r.Succeeded, r.Failed, r.RolledBack)
	fmt.Fprintf(tw, "deployment frequency\t%.2f per day\n", r.DeploysPerDay)
	lead := durations(r.LeadTime, "deploy")
	if r.LeadTimeUnknown > 0 {
		lead += fmt.Sprintf("; %d not dated by git", r.LeadTimeUnknown)
	}
	fmt.Fprintf(tw, "lead time for changes\t%s\n", lead)
	rate := "none"
	if r.Deploys > 0 {
		rate = fmt.Sprintf("%.0f%% (%d of %d)", 100*r.ChangeFailureRate, r.ChangeFailures, r.Deploys)
	}
	fmt.Fprintf(tw, "change failure rate\t%s\n", rate)
	fmt.Fprintf(tw, "time to restore\t%s\n", durations(r.TimeToRestore, "incident"))
	return tw.Flush()
}

// durations says "median 1h0m0s, p90 2h0m0s, max 2h0m0s (6 deploys)", or "none".
func durations(d dora.Durations, what string) string {
	if d.Count == 0 {
		return "none"
	}
	s := func(sec float64) string { return time.Duration(sec * float64(time.Second)).Round(time.Second).String() }
	plural := what + "s"
	if d.Count == 1 {
		plural = what
	}
	return fmt.Sprintf("median %s, p90 %s, max %s (%d %s)", s(d.MedianSeconds), s(d.P90Seconds), s(d.MaxSeconds), d.Count, plural)
}
