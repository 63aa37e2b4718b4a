package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// prbotDeps are what the prbot commands read from the world; tests replace
// them through the command's context (withPrbotDeps).
type prbotDeps struct {
	lookup func(string) (string, bool)
	now    func() time.Time
}

type prbotDepsKey struct{}

func withPrbotDeps(ctx context.Context, d prbotDeps) context.Context {
	return context.WithValue(ctx, prbotDepsKey{}, d)
}

func prbotDepsFrom(ctx context.Context) (prbotDeps, error) {
	if d, ok := ctx.Value(prbotDepsKey{}).(prbotDeps); ok {
		return d, nil
	}
	now, err := clock.Local(os.LookupEnv)
	if err != nil {
		return prbotDeps{}, err
	}
	return prbotDeps{lookup: os.LookupEnv, now: now}, nil
}

func (d prbotDeps) env(key string) string {
	v, _ := d.lookup(key)
	return v
}

// botFlags are the flags every one-shot prbot command shares: which
// repository, how to reach GitHub and the lock API.
type botFlags struct {
	repo           string
	githubURL      string
	webURL         string
	tokenFile      string
	appID          int64
	installationID int64
	privateKeyFile string
	base, root     string
	upstreamOwner  string
	lockServer     string
	lockTokenFile  string
	output         string
	// allowUnknownKeys is reconciler.yaml's manifest.allowUnknownKeys
	// (prbot serve: the same key in its config).
	allowUnknownKeys bool
}

func (f *botFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "the manifests repository, OWNER/NAME (required)")
	fl.StringVar(&f.githubURL, "github-url", "", "GitHub API URL for GitHub Enterprise and tests, e.g. https://ghe.example.com/api/v3 (default $GITHUB_API_URL, else api.github.com)")
	fl.StringVar(&f.webURL, "web-url", "", "GitHub web root for compare links (default: derived from --github-url, else https://github.com)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding a GitHub token (default: $GITHUB_TOKEN); or use the GitHub App flags")
	fl.Int64Var(&f.appID, "app-id", 0, "GitHub App id (with --installation-id and --private-key-file)")
	fl.Int64Var(&f.installationID, "installation-id", 0, "GitHub App installation id")
	fl.StringVar(&f.privateKeyFile, "private-key-file", "", "GitHub App private key (PEM)")
	fl.StringVar(&f.base, "base", "main", "base branch of the manifests repository")
	fl.StringVar(&f.root, "root", ".", "directory of the manifests repository holding environments/ and pipeline.yaml")
	fl.StringVar(&f.upstreamOwner, "upstream-owner", "", "organisation of the upstream repositories for compare links (default: the --repo owner)")
	fl.StringVar(&f.lockServer, "lock-server", "", "URL of the reconciler's API for lock checks and its environments' deploy windows (a promotion into a frozen stage waits; default $STAGEHAND_SERVER; none: no such checks)")
	fl.StringVar(&f.lockTokenFile, "lock-token-file", "", "file holding the reconciler API token (default: $STAGEHAND_TOKEN)")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.BoolVar(&f.allowUnknownKeys, "allow-unknown-keys", false, "accept keys in manifest files that Stagehand does not know (as manifest.allowUnknownKeys: true in reconciler.yaml); default: they are errors")
}

func splitRepo(s string) (string, string, error) {
	o, n, ok := strings.Cut(s, "/")
	if !ok || o == "" || n == "" || strings.Contains(n, "/") {
		return "", "", command.Usagef("--repo %q: want OWNER/NAME", s)
	}
	return o, n, nil
}

// bot builds the GitHub client (through internal/github), the lock checker
// and the bot.
func (f *botFlags) bot(d prbotDeps, extra ...prbot.Option) (*prbot.Bot, error) {
	if f.output != "text" && f.output != "json" {
		return nil, command.Usagef("invalid --output %q: want text or json", f.output)
	}
	owner, name, err := splitRepo(f.repo)
	if err != nil {
		return nil, err
	}
	apiURL := f.githubURL
	if apiURL == "" {
		apiURL = d.env("GITHUB_API_URL")
	}
	if apiURL == "https://api.github.com" {
		apiURL = ""
	}
	b, err := f.builder(d, &config.Config{GitHub: config.GitHub{APIURL: apiURL, Owner: owner, Repo: name},
		Manifest: config.Manifest{AllowUnknownKeys: f.allowUnknownKeys}})
	if err != nil {
		return nil, err
	}
	gh, err := b.GitHub()
	if err != nil {
		return nil, err
	}
	web := f.webURL
	if web == "" {
		web = prbot.WebRoot(apiURL)
	}
	bopts := []prbot.Option{prbot.WithBase(f.base), prbot.WithRoot(f.root), prbot.WithWebURL(web),
		// Soak, windows of merges, blocked-check times: on GitHub's clock, which check runs' times are on.
		prbot.WithClock(gh.Now),
		prbot.WithManifestOptions(b.ManifestOptions()...)}
	if f.upstreamOwner != "" {
		bopts = append(bopts, prbot.WithUpstreamOwner(f.upstreamOwner))
	}
	locks, reconciler, err := f.locks(d, gh.Now)
	if err != nil {
		return nil, err
	}
	if locks != nil {
		// The reconciler's API: its locks, and its environments' deploy windows (a frozen stage waits).
		bopts = append(bopts, prbot.WithLocks(locks), prbot.WithFreezes(freezes{reconciler}))
	}
	return prbot.New(gh.REST(), owner, name, append(bopts, extra...)...)
}

// builder builds prbot's parts from cfg as the reconciler's are built
// (internal/wire): the GitHub client of the repository, with the GitHub App
// flags, a --token-file or $GITHUB_TOKEN, in that order, on d's clock.
func (f *botFlags) builder(d prbotDeps, cfg *config.Config) (*wire.Builder, error) {
	opts := []wire.Option{wire.WithLocalClock(d.now)}
	switch {
	case f.appID != 0 || f.installationID != 0 || f.privateKeyFile != "":
		if f.appID == 0 || f.installationID == 0 || f.privateKeyFile == "" {
			return nil, command.Usagef("--app-id, --installation-id and --private-key-file go together")
		}
		cfg.GitHub.App = &config.GitHubApp{AppID: f.appID, InstallationID: f.installationID, PrivateKeyFile: f.privateKeyFile}
	case f.tokenFile != "":
		tok, err := command.ReadSecret(f.tokenFile, "--token-file")
		if err != nil {
			return nil, err
		}
		opts = append(opts, wire.WithGitHubToken(tok))
	case d.env("GITHUB_TOKEN") != "":
		opts = append(opts, wire.WithGitHubToken(d.env("GITHUB_TOKEN")))
	default:
		return nil, command.Usagef("no GitHub credentials: pass --token-file, set $GITHUB_TOKEN, or use --app-id/--installation-id/--private-key-file")
	}
	return wire.New(cfg, opts...)
}

// locks is the reconciler's lock API at --lock-server (or
// $STAGEHAND_SERVER); nil when neither is set: no lock checks.
func (f *botFlags) locks(d prbotDeps, now func() time.Time) (prbot.LockChecker, *api.Client, error) {
	server := f.lockServer
	if server == "" {
		server = d.env("STAGEHAND_SERVER")
	}
	if server == "" {
		return nil, nil, nil
	}
	token, err := command.APIToken(d.lookup, f.lockTokenFile, "--lock-token-file", "--lock-server")
	if err != nil {
		return nil, nil, err
	}
	c, err := api.NewClient(server, token)
	if err != nil {
		return nil, nil, command.Usagef("--lock-server: %v", err)
	}
	lc, err := c.Locks()
	if err != nil {
		return nil, nil, err
	}
	return prbot.LockClient(lc, now), c, nil
}

// freezes is prbot.Freezes over the reconciler's API: an environment is frozen while the windows the
// environment view shows are closed.
type freezes struct{ c *api.Client }

func (f freezes) Frozen(ctx context.Context, env string) (string, error) {
	v, err := f.c.Environment(ctx, env)
	if ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		// A stage the reconciler does not deploy (UnknownEnvironment), or a server that serves only
		// the lock API: no windows to judge.
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if v.Windows == nil || v.Windows.Open {
		return "", nil
	}
	return v.Windows.String(), nil
}

// ownedFile is the file an upstream repository owns by the ownership
// convention: its name from $GITHUB_REPOSITORY (OWNER/NAME) or $CI_PROJECT_NAME.
func ownedFile(d prbotDeps) string {
	if r := d.env("GITHUB_REPOSITORY"); r != "" {
		_, name, _ := strings.Cut(r, "/")
		if name != "" {
			return name + ".json"
		}
	}
	if p := d.env("CI_PROJECT_NAME"); p != "" {
		return p + ".json"
	}
	return ""
}

// Commands lists the constructors of prbot's own subcommands (bump,
// promote, serve); internal/cli composes them into the prbot binary's tree.
func Commands() []func() *cobra.Command {
	return []func() *cobra.Command{newPrbotBumpCommand, newPrbotPromoteCommand, newPrbotServeCommand}
}

func newPrbotBumpCommand() *cobra.Command {
	var (
		f            botFlags
		via          viaFlags
		req          prbot.BumpRequest
		checks       []string
		mergeMethod  string
		pollInterval time.Duration
		wait         bumpWaitFlags
	)
	cmd := &cobra.Command{
		Use:   "bump (--repo OWNER/NAME | --via URL) --env ENV --service S --tag T [--digest D] [--container C] [--file F.json]",
		Short: "Open or update the pull request that deploys a new image into an environment",
		Long: `Edits environments/<env>/<file> of the manifests repository on branch stagehand/bump-<env>-<file>
and opens one pull request per environment and file, updated in place by later bumps. The file defaults to
the one the calling repository owns ($GITHUB_REPOSITORY or $CI_PROJECT_NAME + ".json"). Only the changed
values' lines change. Re-running the same bump changes nothing; a bump older (by SemVer) than what the
branch already has is ignored. With --auto-merge the pull request is merged once its checks are green and
no lock blocks the environment's lockPath (pipeline.yaml).

With --via URL the bump is sent to prbot serve's keyless bump API instead (POST URL/api/v1/bumps), authenticated
by the CI job's own OIDC ID token: on GitHub Actions it is requested with $ACTIONS_ID_TOKEN_REQUEST_URL and
$ACTIONS_ID_TOKEN_REQUEST_TOKEN for --audience (the job needs permissions: id-token: write); on GitLab CI it is
read from the variable --token-env names (default STAGEHAND_ID_TOKEN, defined with id_tokens). No credential is
stored in the upstream repository; prbot serve decides which file the repository may bump and bumps it with its
own. --repo and the GitHub, lock and merge flags do not apply.

With --wait the command then waits, within --timeout (default 30m, counted from the bump's answer), for the
pull request to merge (read from GitHub from every --interval, backing off to a minute, the rate limit's reset
and Retry-After honoured) and then for the deploy of --service at --tag in --env, read through the reconciler's
API at --server ($STAGEHAND_SERVER) with the token of --server-token-file ($STAGEHAND_TOKEN; read-only is
enough), as "reconciler wait --service NAME=VERSION" waits: the service at its tag, whatever the merge method
and whatever merged after it. Progress lines go to stdout (-o json: stderr). With --via the pull request is read
without GitHub credentials (at --github-url or $GITHUB_API_URL): only a public manifests repository shows it, a
private one ends the wait with exit 1 saying so (bump with --auto-merge instead: prbot serve merges and says
so, and only the deploy is waited for).

Prints the pull request URL (-o json: the whole result). Exit 1 on errors (a refused --via bump included), or
when --auto-merge could not merge (failed checks, timeout, a lock); 2 on usage errors. With --wait, as
"reconciler wait": 0 deployed and verified; 1 failed, rejected, rolled back, superseded, or the pull request
closed without merging (the message says which); 2 timed out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := prbotDepsFrom(cmd.Context())
			if err != nil {
				return err
			}
			if req.Env == "" || req.Service == "" || req.Tag == "" {
				return command.Usagef("--env, --service and --tag are required")
			}
			dw, err := wait.prepare(cmd, d, req, f.output)
			if err != nil {
				return err
			}
			if via.url != "" {
				res, err := via.bump(cmd, d, req, f.output)
				if err != nil || dw == nil {
					return err
				}
				var merges mergeReader
				if res.PR != 0 && !res.Merged {
					apiURL := f.githubURL
					if apiURL == "" {
						apiURL = d.env("GITHUB_API_URL")
					}
					if merges, err = anonymousMerges(d, apiURL, res.URL); err != nil {
						return err
					}
				}
				return dw.then(cmd, res, merges)
			}
			if req.File == "" {
				req.File = ownedFile(d)
				if req.File == "" {
					return command.Usagef("no --file and neither $GITHUB_REPOSITORY nor $CI_PROJECT_NAME is set to name the owned file")
				}
			}
			opts := []prbot.Option{prbot.WithRequiredChecks(checks...)}
			if mergeMethod != "" {
				opts = append(opts, prbot.WithMergeMethod(mergeMethod))
			}
			if pollInterval > 0 {
				opts = append(opts, prbot.WithPollInterval(pollInterval))
			}
			b, err := f.bot(d, opts...)
			if err != nil {
				return err
			}
			res, err := b.Bump(cmd.Context(), req)
			if err != nil {
				return err
			}
			if err := printBump(cmd, f.output, req.AutoMerge, res); err != nil || dw == nil {
				return err
			}
			return dw.then(cmd, res, b.WaitMerged)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&req.Env, "env", "", "environment directory under environments/ (required)")
	fl.StringVar(&req.Service, "service", "", "service name (required)")
	fl.StringVar(&req.Tag, "tag", "", "image tag (required)")
	fl.StringVar(&req.Digest, "digest", "", "image digest sha256:… (empty: the file keeps no digest)")
	fl.StringVar(&req.Container, "container", "", "container dockerName (default: the service name)")
	fl.StringVar(&req.File, "file", "", "file under environments/<env>/ (default: <calling repository>.json)")
	fl.BoolVar(&req.AutoMerge, "auto-merge", false, "merge once checks are green and no lock blocks")
	fl.DurationVar(&req.MergeTimeout, "merge-timeout", 30*time.Minute, "how long --auto-merge waits")
	fl.DurationVar(&pollInterval, "poll-interval", 10*time.Second, "how often --auto-merge re-reads checks and locks")
	fl.StringArrayVar(&checks, "require-check", nil, "check run or status that must have succeeded before merging (repeatable)")
	fl.StringVar(&mergeMethod, "merge-method", "merge", "merge, squash or rebase")
	via.register(cmd)
	wait.register(cmd)
	return cmd
}

// printBump writes a bump's result as prbot bump does: the pull request
// URL (-o json: the whole result), exiting 1 when a lock or hold blocked it
// or an auto-merge did not merge.
func printBump(cmd *cobra.Command, output string, autoMerge bool, res *prbot.BumpResult) error {
	if output == "json" {
		if err := command.WriteJSON(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	} else {
		if res.URL != "" {
			fmt.Fprintln(cmd.OutOrStdout(), res.URL)
		}
		if res.Reason != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), res.Reason)
		}
		if res.Merged {
			fmt.Fprintf(cmd.ErrOrStderr(), "merged #%d\n", res.PR)
		}
	}
	if res.Blocked || (autoMerge && !res.Merged && res.PR != 0) {
		if output == "json" {
			fmt.Fprintf(cmd.ErrOrStderr(), "not merged: %s\n", res.Reason)
		}
		return command.Exit(1, nil)
	}
	return nil
}

func newPrbotPromoteCommand() *cobra.Command {
	var (
		f        botFlags
		from, to string
		dryRun   bool
		checks   []string
	)
	cmd := &cobra.Command{
		Use:   "promote --repo OWNER/NAME --from A --to B [--dry-run]",
		Short: "Open, update or close the promotion pull request between two stages",
		Long: `Evaluates the promotion A → B of pipeline.yaml on the base branch: the services whose versions differ,
the gates of stage B (healthy, soak, window) and its lock. Opens or updates the single pull request on
branch stagehand/promote-<A>-<B>, closes it when nothing is left to promote, and only comments on it when
B is locked or outside its promotion window (with no pull request open, a neutral check run named
stagehand/promote-<A>-<B> on the base branch's head says why). With autoMerge on stage B it merges once
checks are green.

Prints what it did and the pull request URL (-o json: the whole decision). --dry-run writes nothing and
prints the pull request it would open.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return command.Usagef("--from and --to are required")
			}
			d, err := prbotDepsFrom(cmd.Context())
			if err != nil {
				return err
			}
			b, err := f.bot(d, prbot.WithRequiredChecks(checks...))
			if err != nil {
				return err
			}
			res, err := b.Promote(cmd.Context(), from, to, dryRun)
			if err != nil {
				return err
			}
			if f.output == "json" {
				return command.WriteJSON(cmd.OutOrStdout(), res)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s → %s: %s", from, to, res.Action)
			if res.URL != "" {
				fmt.Fprintf(out, " %s", res.URL)
			}
			if res.Merged {
				fmt.Fprint(out, " (merged)")
			}
			fmt.Fprintln(out)
			if res.Reason != "" {
				fmt.Fprintln(out, res.Reason)
			}
			if dryRun && res.Title != "" {
				fmt.Fprintf(out, "\n%s\n\nfiles: %s\n\n%s", res.Title, strings.Join(res.Files, ", "), res.Body)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "earlier stage (required)")
	cmd.Flags().StringVar(&to, "to", "", "later stage (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "compute and print, write nothing")
	cmd.Flags().StringArrayVar(&checks, "require-check", nil, "check run or status that must have succeeded before an auto-merge (repeatable)")
	return cmd
}
