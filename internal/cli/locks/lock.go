package locks

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// The deploy-lock commands of seed 002: reconciler lock|unlock|check|prune|list.
// Paths come as arguments or --path (repeatable); every command talks to the
// reconciler's API (--server) or directly to the storage (--storage kubernetes).
// Exit codes: 0 done / free, 1 locked or refused, 2 usage.

// defaultLockDuration is a lock's lifetime when neither --duration nor --until is given.
const defaultLockDuration = "1h"

// lockPaths gathers the paths from arguments and --path, lowercased and validated.
func lockPaths(args, flagPaths []string, allowNone bool) ([]string, error) {
	raw := append(append([]string{}, args...), flagPaths...)
	if len(raw) == 0 {
		if allowNone {
			return []string{""}, nil
		}
		return nil, command.Usagef("expected a lock path such as apps/staging/a/auth-app (argument or --path)")
	}
	out := make([]string, 0, len(raw))
	for _, p := range raw {
		n, err := lock.NormalizePath(p)
		if err != nil {
			return nil, command.Usagef("%v", err)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseTypeFlag(name, v string) (lock.Type, error) {
	t, err := lock.ParseType(v)
	if err != nil {
		return "", command.Usagef("--%s: %v", name, err)
	}
	return t, nil
}

var envTargetRE = regexp.MustCompile(`^[a-z]$`)

// lockDataFlags are the seed's user options of `lock`.
type lockDataFlags struct {
	typ, author, duration, until                  string
	links                                         []string
	allow                                         []string
	envCluster, envAccount, envTarget             string
	ciProject, ciRef, ciCommit, ciPipeline, ciJob string
}

func (f *lockDataFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.typ, "type", "deploy", "type of lock: automation, deploy, incident, freeze or hold (a rollback hold: stops the bots, lets deploys pass)")
	fl.StringVar(&f.author, "author", "", "who takes the lock (default $GITLAB_USER_EMAIL in GitLab CI, $GITHUB_ACTOR in GitHub Actions, else $USER)")
	fl.StringVar(&f.duration, "duration", "", "lifetime of the lock, such as 90m, 6h or 2d (default 1h; excludes --until)")
	fl.StringVar(&f.until, "until", "", "expiry of the lock, such as 2022-12-31T12:00 (local time unless it ends in Z; excludes --duration)")
	fl.StringArrayVar(&f.links, "link", nil, "a link name=url to keep with the lock (repeatable)")
	fl.StringArrayVar(&f.allow, "allow", nil, "a type of action this lock lets pass, such as deploy for an incident that allows hotfixes (repeatable)")
	fl.StringVar(&f.envCluster, "env-cluster", "", "cluster (default $CLUSTER_NAME, else the 1st path segment)")
	fl.StringVar(&f.envAccount, "env-account", "", "environment/account (default $DEPLOY_ENV, else the 2nd path segment)")
	fl.StringVar(&f.envTarget, "env-target", "", "target, one letter (default $DEPLOY_TARGET, else the 3rd path segment)")
	fl.StringVar(&f.ciProject, "ci-project", "", "project path (default $CI_PROJECT_PATH or $GITHUB_REPOSITORY, else the 4th path segment)")
	fl.StringVar(&f.ciRef, "ci-ref", "", "branch or tag (default $CI_COMMIT_REF_SLUG or $GITHUB_REF_NAME, else the 5th path segment)")
	fl.StringVar(&f.ciCommit, "ci-commit", "", "commit SHA (default $CI_COMMIT_SHA or $GITHUB_SHA)")
	fl.StringVar(&f.ciPipeline, "ci-pipeline", "", "pipeline ID (default $CI_PIPELINE_ID or $GITHUB_RUN_ID)")
	fl.StringVar(&f.ciJob, "ci-job", "", "job ID (default $CI_JOB_ID or $GITHUB_JOB)")
}

// request builds the lock request for path; the CI and env defaults come
// from this process's environment.
func (f *lockDataFlags) request(path string, d lockDeps) (lockapi.LockRequest, error) {
	if f.duration != "" && f.until != "" {
		return lockapi.LockRequest{}, command.Usagef("--duration and --until are mutually exclusive")
	}
	t, err := parseTypeFlag("type", f.typ)
	if err != nil {
		return lockapi.LockRequest{}, err
	}
	l := lock.Lock{Path: path, Type: t, Author: strings.TrimSpace(f.author),
		Env: lock.Env{Cluster: f.envCluster, Account: f.envAccount, Target: f.envTarget}}
	if f.envTarget != "" && !envTargetRE.MatchString(f.envTarget) {
		return lockapi.LockRequest{}, command.Usagef("invalid --env-target %q: want one lowercase letter, such as a", f.envTarget)
	}
	for _, a := range f.allow {
		at, err := parseTypeFlag("allow", a)
		if err != nil {
			return lockapi.LockRequest{}, err
		}
		l.Allow = append(l.Allow, at)
	}
	for _, kv := range f.links {
		name, url, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(url) == "" {
			return lockapi.LockRequest{}, command.Usagef("invalid --link %q: want name=url", kv)
		}
		if l.Links == nil {
			l.Links = map[string]string{}
		}
		l.Links[strings.TrimSpace(name)] = strings.TrimSpace(url)
	}
	if f.ciProject+f.ciRef+f.ciCommit+f.ciPipeline+f.ciJob != "" {
		l.CI = &lock.CI{Project: f.ciProject, Ref: f.ciRef, Commit: f.ciCommit, Pipeline: f.ciPipeline, Job: f.ciJob}
	}
	l.Default(d.lookup)
	if l.Author == "" {
		return lockapi.LockRequest{}, command.Usagef("no author: pass --author (or set $USER)")
	}
	if err := lock.CheckReservedAuthor(l.Author); err != nil {
		return lockapi.LockRequest{}, command.Usagef("--author: %v", err)
	}
	req := lockapi.LockRequest{Lock: l}
	switch {
	case f.until != "":
		u, err := lock.ParseUntil(f.until, d.loc)
		if err != nil {
			return lockapi.LockRequest{}, command.Usagef("--until: %v", err)
		}
		req.ExpiresAt = u // checked against the store's clock, not this host's
	case f.duration != "":
		if _, err := lock.ParseDuration(f.duration); err != nil {
			return lockapi.LockRequest{}, command.Usagef("--duration: %v", err)
		}
		req.Duration = f.duration
	default:
		req.Duration = defaultLockDuration
	}
	return req, nil
}

// Commands lists the constructors of the reconciler's lock commands: lock,
// unlock, check, prune and list; internal/cli composes them into the
// reconciler's tree.
func Commands() []func() *cobra.Command {
	return []func() *cobra.Command{newLockCommand, newUnlockCommand, newCheckCommand, newPruneCommand, newListCommand}
}

func newLockCommand() *cobra.Command {
	var (
		bf        backendFlags
		df        lockDataFlags
		paths     []string
		recursive bool
	)
	cmd := &cobra.Command{
		Use:   "lock [path...] [--type TYPE] [--duration D | --until TIME]",
		Short: "Lock a path such as apps/staging against deploys",
		Long: `Lock exactly the given path (not its parents). Locking implies checking: if the
path or any parent of it is locked, nothing is written and the blocking locks
are printed (exit 1). With several paths, all are locked or none.`,
		Example: `  reconciler lock apps/acceptance --type automation --duration 90m
  reconciler lock apps/production --type incident --duration 6h --allow deploy --link incident=https://status.example.com/1
  reconciler lock apps/staging --until 2022-12-31T12:00`,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := lockDepsFrom(cmd.Context())
			if err != nil {
				return err
			}
			ps, err := lockPaths(args, paths, false)
			if err != nil {
				return err
			}
			if recursive {
				return command.Usagef("--recursive is not available for lock: a lock is written at exactly one path")
			}
			reqs := make([]lockapi.LockRequest, len(ps))
			for i, p := range ps {
				if reqs[i], err = df.request(p, d); err != nil {
					return err
				}
			}
			b, err := bf.backend(cmd.Context(), d)
			if err != nil {
				return err
			}
			var taken []lock.Lock
			for _, r := range reqs {
				l, err := b.Lock(cmd.Context(), r)
				if err != nil {
					for _, t := range taken { // all or none
						_, _ = b.Unlock(cmd.Context(), t.Path, t.Type, false)
					}
					return lockFailure(cmd, d, err)
				}
				taken = append(taken, l)
			}
			for _, l := range taken {
				fmt.Fprintln(cmd.OutOrStdout(), l.LockedMessage(d.loc))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&paths, "path", nil, "path to lock (repeatable; or as arguments)")
	cmd.Flags().BoolVar(&recursive, "recursive", false, "not available for lock (the seed's default false)")
	df.register(cmd)
	bf.register(cmd)
	return cmd
}

func newUnlockCommand() *cobra.Command {
	var (
		bf        backendFlags
		paths     []string
		typ       string
		recursive bool
	)
	cmd := &cobra.Command{
		Use:   "unlock [path...] --type TYPE",
		Short: "Remove the lock of the given type at a path",
		Long: `Remove the lock at the path. --type must be the lock's type, so that an
automation or deploy job cannot remove an incident lock by accident (exit 1).
With --recursive, remove every lock of that type at and beneath the path.`,
		Example: `  reconciler unlock apps/acceptance --type automation`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTypeFlag("type", typ)
			if err != nil {
				return err
			}
			d, ps, b, err := bf.open(cmd, args, paths, false)
			if err != nil {
				return err
			}
			failed := false
			for _, p := range ps {
				removed, err := b.Unlock(cmd.Context(), p, t, recursive)
				if errors.Is(err, lock.ErrNotFound) {
					what := "not locked"
					if recursive {
						what = "not locked for " + t.Friendly() + ", nor is anything beneath it"
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s is %s\n", p, what)
					failed = true
					continue
				}
				if err != nil {
					if err := lockFailure(cmd, d, err); command.IsUsage(err) || !isExit(err) {
						return err
					}
					failed = true
					continue
				}
				for _, l := range removed {
					fmt.Fprintf(cmd.OutOrStdout(), "Unlocked %s (%s)\n", l.Path, l.Type.Friendly())
				}
			}
			if failed {
				return command.Exit(1, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&paths, "path", nil, "path to unlock (repeatable; or as arguments)")
	cmd.Flags().StringVar(&typ, "type", "deploy", "type of the lock to remove; must match the lock")
	cmd.Flags().BoolVar(&recursive, "recursive", false, "remove every lock of --type at and beneath the path")
	bf.register(cmd)
	return cmd
}

func isExit(err error) bool {
	var ee *command.ExitError
	return errors.As(err, &ee)
}

func newCheckCommand() *cobra.Command {
	var (
		bf        backendFlags
		paths     []string
		typ       string
		recursive bool
	)
	cmd := &cobra.Command{
		Use:   "check [path...]",
		Short: "Check whether a path may be deployed (exit 0 free, 1 locked)",
		Long: `Check the path and, unless --recursive=false, every parent of it: a lock at
apps/staging blocks apps/staging/a/auth-app. Expired locks never block, and a
lock that allows --type lets it pass.`,
		Example: `  reconciler check apps/acceptance/a/saas-app/develop
  reconciler check apps/staging/a/auth-app --recursive=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTypeFlag("type", typ)
			if err != nil {
				return err
			}
			d, ps, b, err := bf.open(cmd, args, paths, false)
			if err != nil {
				return err
			}
			seen := map[string]bool{}
			var blocking []lock.Lock
			for _, p := range ps {
				ls, err := b.Check(cmd.Context(), p, t, recursive)
				if err != nil {
					return lockFailure(cmd, d, err)
				}
				for _, l := range ls {
					if !seen[l.Path] {
						seen[l.Path] = true
						blocking = append(blocking, l)
					}
				}
			}
			if len(blocking) > 0 {
				return lockFailure(cmd, d, &lock.LockedError{Locks: blocking})
			}
			for _, p := range ps {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is not locked for %s\n", p, t.Friendly())
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&paths, "path", nil, "path to check (repeatable; or as arguments)")
	cmd.Flags().StringVar(&typ, "type", "deploy", "type of the action to check for; locks that allow it let it pass")
	cmd.Flags().BoolVar(&recursive, "recursive", true, "check every parent of the path too (false: only the path itself)")
	bf.register(cmd)
	return cmd
}

func newPruneCommand() *cobra.Command {
	var (
		bf    backendFlags
		paths []string
	)
	cmd := &cobra.Command{
		Use:     "prune [path...]",
		Short:   "Delete expired locks at and beneath a path (all without one)",
		Example: `  reconciler prune apps/staging`,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, ps, b, err := bf.open(cmd, args, paths, true)
			if err != nil {
				return err
			}
			n := 0
			for _, p := range ps {
				pruned, err := b.Prune(cmd.Context(), p)
				if err != nil {
					return lockFailure(cmd, d, err)
				}
				for _, l := range pruned {
					fmt.Fprintf(cmd.OutOrStdout(), "Pruned %s (%s, expired %s)\n", l.Path, l.Type.Friendly(), l.ExpiresAt.In(d.loc).Format(lock.TimeLayout))
				}
				n += len(pruned)
			}
			if n == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No expired locks")
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&paths, "path", nil, "path to prune within (repeatable; or as arguments)")
	bf.register(cmd)
	return cmd
}

func newListCommand() *cobra.Command {
	var (
		bf     backendFlags
		paths  []string
		output string
	)
	cmd := &cobra.Command{
		Use:   "list [path...]",
		Short: "List the locks at and beneath a path (all without one)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return command.Usagef("invalid --output %q: expected text or json", output)
			}
			d, ps, b, err := bf.open(cmd, args, paths, true)
			if err != nil {
				return err
			}
			all := []lock.Lock{}
			for _, p := range ps {
				ls, err := b.List(cmd.Context(), p)
				if err != nil {
					return lockFailure(cmd, d, err)
				}
				all = append(all, ls...)
			}
			if output == "json" {
				return command.WriteJSON(cmd.OutOrStdout(), map[string]any{"locks": all})
			}
			return writeLockTable(cmd.OutOrStdout(), all, d.now(), d.loc)
		},
	}
	cmd.Flags().StringArrayVar(&paths, "path", nil, "path to list within (repeatable; or as arguments)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	bf.register(cmd)
	return cmd
}

// writeLockTable prints locks as list's table: path, type, author, expiry
// (in loc) and whether the lock is active or expired at now, with the types
// it allows.
func writeLockTable(w io.Writer, locks []lock.Lock, now time.Time, loc *time.Location) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tTYPE\tAUTHOR\tEXPIRES\tSTATUS")
	for _, l := range locks {
		status := "active"
		if l.Expired(now) {
			status = "expired"
		}
		if len(l.Allow) > 0 {
			allow := make([]string, len(l.Allow))
			for i, a := range l.Allow {
				allow[i] = string(a)
			}
			status += " (allows " + strings.Join(allow, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Path, l.Type, l.Author, l.ExpiresAt.In(loc).Format(lock.TimeLayout), status)
	}
	return tw.Flush()
}
