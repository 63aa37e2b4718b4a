package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// planFlags are the flags plan and apply share.
type planFlags struct {
	config, env, dir, output string
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "", "reconciler.yaml (required)")
	cmd.Flags().StringVar(&f.env, "env", "", "environment to plan (a key of environments: in the config; required)")
	cmd.Flags().StringVar(&f.dir, "dir", "", "read manifests from this checkout instead of the configured git source")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
}

func (f *planFlags) check(args []string) error {
	switch {
	case len(args) > 0:
		return command.Usagef("unexpected arguments %q", args)
	case f.config == "":
		return command.Usagef("--config is required")
	case f.env == "":
		return command.Usagef("--env is required")
	case f.output != "text" && f.output != "json":
		return command.Usagef("invalid --output %q: expected text or json", f.output)
	}
	if f.dir != "" {
		if fi, err := os.Stat(f.dir); err != nil || !fi.IsDir() {
			return command.Usagef("--dir %s is not a directory", f.dir)
		}
	}
	return nil
}

// planSetup is everything needed to plan or apply one environment.
type planSetup struct {
	rec *reconcile.Reconciler
	req reconcile.Request
	cfg *config.Config
}

// setup loads the config, the manifests (from --dir or the git source), the
// targets' clients and the locks. Manifest errors are printed and give exit 1.
func (f *planFlags) setup(cmd *cobra.Command) (*planSetup, error) {
	ctx := cmd.Context()
	cfg, err := config.Load(f.config)
	if err != nil {
		return nil, err
	}
	envCfg, ok := cfg.Environments[f.env]
	if !ok {
		return nil, command.Usagef("unknown environment %q; configured: %s", f.env, strings.Join(cfg.EnvironmentNames(), ", "))
	}
	// Every part built once, as reconciler run builds them; deploy locks and Events are this command's author's.
	b, err := wire.New(cfg, wire.WithAuthor(author()))
	if err != nil {
		return nil, err
	}
	fsys, revision, err := f.manifests(ctx, b)
	if err != nil {
		return nil, err
	}
	e, err := manifest.Resolve(ctx, manifest.Repo{FS: fsys, Root: cfg.Source.Root}, f.env, b.ManifestOptions()...)
	if err != nil {
		var list *manifest.ErrorList
		if errors.As(err, &list) {
			fmt.Fprintln(cmd.ErrOrStderr(), list.Error())
			return nil, command.Exit(1, nil)
		}
		return nil, err
	}
	for _, w := range e.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w.Error())
	}
	targets, err := b.Targets(f.env)
	if err != nil {
		return nil, err
	}
	rec, err := b.Reconciler()
	if err != nil {
		return nil, err
	}
	return &planSetup{
		rec: rec, cfg: cfg,
		req: reconcile.Request{Environment: e, Revision: revision, Targets: targets, LockPath: envCfg.LockPath},
	}, nil
}

// manifests returns the manifests tree and its revision: the --dir checkout
// (revision = its HEAD commit, or "local" outside git) or the newest commit of
// the configured branch.
func (f *planFlags) manifests(ctx context.Context, b *wire.Builder) (fs.FS, string, error) {
	cfg := b.Config()
	if f.dir != "" {
		rev := "local"
		if repo, err := git.PlainOpenWithOptions(f.dir, &git.PlainOpenOptions{DetectDotGit: true}); err == nil {
			if head, err := repo.Head(); err == nil {
				rev = head.Hash().String()
			}
		}
		return os.DirFS(f.dir), rev, nil
	}
	if cfg.Source.URL == "" {
		return nil, "", command.Usagef("source.url is not configured; pass --dir CHECKOUT")
	}
	src, err := b.Source()
	if err != nil {
		return nil, "", err
	}
	snap, err := src.Poll(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("reading manifests from %s: %w", src.Status().URL, err)
	}
	return snap.FS, snap.Revision, nil
}

// author names who runs the command, for the deploy lock and Events.
func author() string {
	for _, k := range []string{"GITLAB_USER_LOGIN", "GITHUB_ACTOR", "USER"} {
		if v := os.Getenv(k); v != "" {
			return "stagehand (" + v + ")"
		}
	}
	return reconcile.DefaultAuthor
}

// newPlanCommand is `reconciler plan`.
func newPlanCommand() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan --config FILE --env ENV [--dir CHECKOUT] [-o json|text]",
		Short: "Show what applying an environment would change in its clusters",
		Long: `Resolve the environment's manifests (from --dir, or the newest commit of the
configured branch), map services to workloads in every target and print the
changes, blocked changes, problems and unmanaged workloads, with the planHash
that "reconciler apply --plan-hash" takes. Exit 0 when a plan was made (even
with problems), 1 on errors, 2 on usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(args); err != nil {
				return err
			}
			s, err := f.setup(cmd)
			if err != nil {
				return err
			}
			p, err := s.rec.Plan(cmd.Context(), s.req)
			if err != nil {
				return err
			}
			if f.output == "json" {
				return command.WriteJSON(cmd.OutOrStdout(), p)
			}
			printPlan(cmd.OutOrStdout(), p)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// printPlan writes the plan as tables per target, for a reviewer to skim.
func printPlan(w io.Writer, p *reconcile.Plan) {
	fmt.Fprintf(w, "Environment %s at revision %s\nplanHash %s\n", p.Environment, p.Revision, p.PlanHash)
	if p.SkipConfirmation {
		fmt.Fprintln(w, "skipConfirmation: true (applies without approval)")
	}
	byTarget := map[string][]reconcile.Change{}
	var targets []string
	for _, c := range p.Changes {
		if _, ok := byTarget[c.Target]; !ok {
			targets = append(targets, c.Target)
		}
		byTarget[c.Target] = append(byTarget[c.Target], c)
	}
	sort.Strings(targets)
	if len(p.Changes) == 0 {
		fmt.Fprintln(w, "\nNo changes.")
	}
	for _, t := range targets {
		cs := byTarget[t]
		fmt.Fprintf(w, "\nTarget %s (namespace %s): %d change(s)\n", t, cs[0].Namespace, len(cs))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SERVICE\tWORKLOAD\tCONTAINER\tFROM\t→ TO")
		for _, c := range cs {
			fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t→ %s\n", c.Service, c.Kind, c.Name, c.Container, c.From, c.To)
		}
		tw.Flush()
	}
	if len(p.Blocked) > 0 {
		fmt.Fprintf(w, "\nBlocked by locks (not applied): %d\n", len(p.Blocked))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, b := range p.Blocked {
			fmt.Fprintf(tw, "  %s\t%s\t%s/%s\t%s → %s\t%s\n", b.Target, b.Service, b.Kind, b.Name, b.From, b.To, strings.Join(b.Locks, "; "))
		}
		tw.Flush()
	}
	if len(p.Problems) > 0 {
		fmt.Fprintf(w, "\nProblems (these services are not applied in that target): %d\n", len(p.Problems))
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "  %s/%s: %s\n", pr.Target, pr.Service, pr.Message)
		}
	}
	if len(p.Unmanaged) > 0 {
		fmt.Fprintf(w, "\nUnmanaged workloads (labelled, not in the manifest): %d\n", len(p.Unmanaged))
		for _, u := range p.Unmanaged {
			fmt.Fprintf(w, "  %s/%s %s/%s (service %s)\n", u.Target, u.Namespace, u.Kind, u.Name, u.Service)
		}
	}
	fmt.Fprintf(w, "\n%d container(s) already up to date.\n", p.Unchanged)
}
