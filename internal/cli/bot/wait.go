package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/waiter"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// bumpWaitFlags are prbot bump's --wait: wait for the bump's pull request
// to merge, then for the deploy of the bumped service at its tag, read
// from the reconciler's API as `reconciler wait --service` does.
type bumpWaitFlags struct {
	wait              bool
	timeout, interval time.Duration
	server, tokenFile string
}

func (w *bumpWaitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&w.wait, "wait", false, "after the bump, wait for its pull request to merge and then for the deploy of the service at the tag (exit 0 deployed, 1 failed, rejected, rolled back, superseded or closed without merging, 2 timed out)")
	fl.DurationVar(&w.timeout, "timeout", 30*time.Minute, "with --wait: how long to wait for the merge and the deploy, together")
	fl.DurationVar(&w.interval, "interval", 2*time.Second, "with --wait: how often to read the environment (the pull request: from this, backing off to 1m)")
	fl.StringVar(&w.server, "server", "", "with --wait: URL of the reconciler's API (default $STAGEHAND_SERVER)")
	fl.StringVar(&w.tokenFile, "server-token-file", "", "with --wait: file holding the reconciler API token, read-only is enough (default: $STAGEHAND_TOKEN)")
}

// prepare checks the --wait flags before anything is bumped and returns
// the deploy wait of req (nil without --wait).
func (w *bumpWaitFlags) prepare(cmd *cobra.Command, d prbotDeps, req prbot.BumpRequest, output string) (*deployWait, error) {
	if !w.wait {
		for _, name := range []string{"timeout", "interval", "server", "server-token-file"} {
			if cmd.Flags().Changed(name) {
				return nil, command.Usagef("--%s applies only with --wait", name)
			}
		}
		return nil, nil
	}
	if w.timeout <= 0 || w.interval <= 0 {
		return nil, command.Usagef("--timeout and --interval must be positive")
	}
	server := w.server
	if server == "" {
		server = d.env("STAGEHAND_SERVER")
	}
	if server == "" {
		return nil, command.Usagef("--wait needs the reconciler's API: pass --server or set $STAGEHAND_SERVER")
	}
	if _, err := command.APIServer(server); err != nil {
		return nil, err
	}
	token, err := command.APIToken(d.lookup, w.tokenFile, "--server-token-file", "--wait")
	if err != nil {
		return nil, err
	}
	client, err := api.NewClient(server, token, api.WithClientTimeout(command.ReadTimeout))
	if err != nil {
		return nil, command.Usagef("--server: %v", err)
	}
	// The service at the tag: what the bump knows, whatever the merge
	// method and whatever else merged after it.
	j, err := waiter.New(waiter.Target{Service: req.Service, Version: req.Tag})
	if err != nil {
		return nil, command.Usagef("%v", err)
	}
	var out io.Writer = cmd.OutOrStdout()
	if output == "json" {
		out = cmd.ErrOrStderr() // stdout holds the result
	}
	return &deployWait{command.DeployWait{Client: client, Env: req.Env, Judge: j, Interval: w.interval, Timeout: w.timeout, Out: out}}, nil
}

// deployWait is `reconciler wait`'s wait for a deploy, after a bump's
// merge.
type deployWait struct{ command.DeployWait }

// mergeReader waits for a pull request to merge: the bot's GitHub client,
// or an anonymous one for a --via bump.
type mergeReader func(ctx context.Context, w prbot.MergeWatch) (string, error)

// then waits, after a bump that answered res, for its pull request to
// merge (read with merged) and for the deploy, within the timeout.
func (dw *deployWait) then(cmd *cobra.Command, res *prbot.BumpResult, merged mergeReader) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), dw.Timeout)
	defer cancel()
	if res.PR != 0 && !res.Merged {
		progress := func(msg string) { fmt.Fprintf(dw.Out, "%s %s\n", time.Now().UTC().Format(time.TimeOnly), msg) }
		_, err := merged(ctx, prbot.MergeWatch{Number: res.PR, Interval: dw.Interval, Progress: progress})
		switch {
		case errors.Is(err, prbot.ErrClosedUnmerged), errors.Is(err, prbot.ErrUnreadable):
			fmt.Fprintf(cmd.ErrOrStderr(), "Error: %v\n", err)
			return command.Exit(1, nil)
		case err != nil && ctx.Err() != nil && cmd.Context().Err() == nil:
			fmt.Fprintf(cmd.ErrOrStderr(), "Error: timed out after %s: pull request #%d not merged\n", dw.Timeout, res.PR)
			return command.Exit(2, nil)
		case err != nil:
			return err
		}
	}
	return dw.Run(ctx, cmd)
}

// anonymousMerges reads the pull request of a --via bump at prURL without
// credentials, through GitHub's API at apiURL (api.github.com when empty),
// with a client the builder makes (internal/wire) on d's clock: a public
// repository shows it; a private one answers 404, and the wait ends with
// prbot.ErrUnreadable saying so.
func anonymousMerges(d prbotDeps, apiURL, prURL string) (mergeReader, error) {
	owner, name, number, err := pullOfURL(prURL)
	if err != nil {
		return nil, err
	}
	if apiURL == "https://api.github.com" {
		apiURL = ""
	}
	b, err := wire.New(&config.Config{GitHub: config.GitHub{APIURL: apiURL, Owner: owner, Repo: name}}, wire.WithLocalClock(d.now), wire.WithAnonymousGitHub())
	if err != nil {
		return nil, err
	}
	gh, err := b.GitHub()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, w prbot.MergeWatch) (string, error) {
		w.Owner, w.Repo, w.Number = owner, name, number
		sha, err := w.Wait(ctx, gh.REST())
		if errors.Is(err, prbot.ErrUnreadable) {
			return "", fmt.Errorf("--wait with --via reads the pull request without GitHub credentials, and %s/%s does not show it to anyone (a private repository?): %w; bump with --auto-merge, so prbot serve merges and says so, or wait with `reconciler wait --service` once it is merged", owner, name, err)
		}
		return sha, err
	}, nil
}

// pullOfURL reads OWNER, NAME and the number of a pull request's web URL
// (https://github.com/OWNER/NAME/pull/N).
func pullOfURL(s string) (string, string, int, error) {
	u, err := url.Parse(s)
	if err == nil {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if n := len(parts); n >= 4 && parts[n-2] == "pull" {
			if number, err := strconv.Atoi(parts[n-1]); err == nil && number > 0 && parts[n-4] != "" && parts[n-3] != "" {
				return parts[n-4], parts[n-3], number, nil
			}
		}
	}
	return "", "", 0, fmt.Errorf("reading the bump API's pull request URL %q: want https://HOST/OWNER/NAME/pull/N", s)
}
