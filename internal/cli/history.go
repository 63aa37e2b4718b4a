package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// historyFlags are the flags of `reconciler history`.
type historyFlags struct {
	server, env, tokenFile, output string
	id                             int64
	timeout                        time.Duration
}

// newHistoryCommand is `reconciler history --server URL --env ENV [--id N] [-o json]`.
func newHistoryCommand() *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history --server URL --env ENV [--id N] [-o text|json]",
		Short: "Show what was applied, rejected or rolled back in an environment",
		Long: `Show an environment's history, newest first: one line per applied, failed,
rejected or rolled-back plan (id, when, revision, result, approver, changes).
With --id, one entry in full: its changes and the manifest as resolved at its
revision (services, containers with tag and digest, the files read with their
git blob hashes): the versions that ran, or were to run, at that point. The
token comes from --token-file or $STAGEHAND_TOKEN; the server from --server or
$STAGEHAND_SERVER.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.Int64Var(&f.id, "id", 0, "show this history entry in full, with its resolved manifest")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the server")
	return cmd
}

func (f *historyFlags) run(cmd *cobra.Command) error {
	switch {
	case f.env == "":
		return command.Usagef("--env is required")
	case f.output != "text" && f.output != "json":
		return command.Usagef("--output %q: want text or json", f.output)
	case cmd.Flags().Changed("id") && f.id < 1:
		return command.Usagef("--id %d: want a positive history entry id, as the history list shows", f.id)
	}
	client, err := command.APIClient(f.server, f.tokenFile, f.timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	what := "reading the history of " + f.env
	out := cmd.OutOrStdout()
	if f.id > 0 {
		e, err := client.HistoryEntry(ctx, f.env, f.id)
		if err != nil {
			return command.Refused(cmd, what, err)
		}
		if f.output == "json" {
			return writeIndented(out, e)
		}
		return printEntry(out, *e)
	}
	history, err := client.History(ctx, f.env)
	if err != nil {
		return command.Refused(cmd, what, err)
	}
	if f.output == "json" {
		if history == nil {
			history = []approval.Entry{}
		}
		return writeIndented(out, history)
	}
	if len(history) == 0 {
		fmt.Fprintf(out, "%s: no history yet\n", f.env)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHEN\tREVISION\tRESULT\tAPPROVER\tCHANGES")
	for _, e := range history {
		id := "-"
		if e.ID > 0 {
			id = strconv.FormatInt(e.ID, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, e.Finished.UTC().Format(time.DateTime), gitsource.ShortRevision(e.Revision),
			e.Result, e.Approver, changesSummary(e.Changes))
	}
	return tw.Flush()
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// changesSummary says how many images an entry changed, and in which services.
func changesSummary(raw json.RawMessage) string {
	var cs []reconcile.Change
	if len(raw) == 0 || json.Unmarshal(raw, &cs) != nil {
		return "?"
	}
	if len(cs) == 0 {
		return "none"
	}
	seen := map[string]bool{}
	var svcs []string
	for _, c := range cs {
		if !seen[c.Service] {
			seen[c.Service] = true
			svcs = append(svcs, c.Service)
		}
	}
	sort.Strings(svcs)
	if len(svcs) > 4 {
		svcs = append(svcs[:4], fmt.Sprintf("+%d more", len(svcs)-4))
	}
	return fmt.Sprintf("%d image(s): %s", len(cs), strings.Join(svcs, ", "))
}

// printEntry shows one entry in full: what happened, what changed, and the
// manifest as resolved at its revision.
func printEntry(w io.Writer, e approval.Entry) error {
	fmt.Fprintf(w, "Entry:     %d\nRevision:  %s\nResult:    %s\nApprover:  %s\nStarted:   %s\nFinished:  %s\n",
		e.ID, e.Revision, e.Result, e.Approver, e.Started.UTC().Format(time.RFC3339), e.Finished.UTC().Format(time.RFC3339))
	if e.Message != "" {
		fmt.Fprintf(w, "Message:   %s\n", e.Message)
	}
	var cs []reconcile.Change
	if json.Unmarshal(e.Changes, &cs) == nil && len(cs) > 0 {
		fmt.Fprintln(w, "\nChanges:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SERVICE\tTARGET\tWORKLOAD\tCONTAINER\tFROM\tTO")
		for _, c := range cs {
			fmt.Fprintf(tw, "  %s\t%s\t%s/%s\t%s\t%s\t%s\n", c.Service, c.Target, c.Kind, c.Name, c.Container, c.From, c.To)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	m := e.Manifest
	if m == nil {
		fmt.Fprintln(w, "\nManifest:  not kept for this entry")
		return nil
	}
	fmt.Fprintf(w, "\nManifest:  %s\n", m.Root)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SERVICE\tVERSION\tIMAGE\tTAG\tDIGEST\tFILE")
	for _, s := range m.Services {
		for _, c := range s.Containers {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.Name, dash(s.Version), c.DockerName, c.DockerTag, dash(c.DockerDigest), s.Source)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nFiles:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range m.Files {
		fmt.Fprintf(tw, "  %s\t%s\n", f.Path, dash(f.Blob))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
