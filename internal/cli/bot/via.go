package bot

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/keyless/bumpclient"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

// viaFlags send a bump to prbot serve's keyless bump API with the CI's
// OIDC ID token.
type viaFlags struct {
	url      string
	audience string
	tokenEnv string
}

func (v *viaFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&v.url, "via", "", "send the bump to prbot serve at this URL with the CI job's OIDC ID token instead of writing with GitHub credentials")
	fl.StringVar(&v.audience, "audience", "stagehand", "with --via on GitHub Actions: the audience of the ID token requested (prbot serve's oidc.issuers[].audience)")
	fl.StringVar(&v.tokenEnv, "token-env", "", "with --via: the variable holding the ID token (GitLab id_tokens; default: GitHub Actions' token request, else $STAGEHAND_ID_TOKEN)")
}

// viaTimeout bounds a --via request beyond the auto-merge wait.
const viaTimeout = 2 * time.Minute

// bump posts req to the bump API and prints the answer like a local bump,
// returning it when it was accepted.
func (v *viaFlags) bump(cmd *cobra.Command, d prbotDeps, req prbot.BumpRequest, output string) (*prbot.BumpResult, error) {
	if output != "text" && output != "json" {
		return nil, command.Usagef("invalid --output %q: want text or json", output)
	}
	for _, name := range []string{"repo", "token-file", "app-id", "installation-id", "private-key-file", "lock-server", "lock-token-file", "require-check", "merge-method", "poll-interval"} {
		if cmd.Flags().Changed(name) {
			return nil, command.Usagef("--%s does not apply with --via: prbot serve's configuration decides", name)
		}
	}
	client, err := bumpclient.New(v.url)
	if err != nil {
		return nil, command.Usagef("--via %v", err)
	}
	body := keyless.BumpBody{Environment: req.Env, Service: req.Service, Container: req.Container, Tag: req.Tag, Digest: req.Digest, File: req.File, AutoMerge: req.AutoMerge}
	wait := time.Duration(0)
	if req.AutoMerge {
		wait = keyless.DefaultBumpMergeWait
		if cmd.Flags().Changed("merge-timeout") {
			if req.MergeTimeout > keyless.MaxBumpMergeWait {
				return nil, command.Usagef("--merge-timeout %s: with --via at most %s", req.MergeTimeout, keyless.MaxBumpMergeWait)
			}
			body.MergeTimeout, wait = req.MergeTimeout.String(), req.MergeTimeout
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), viaTimeout+wait)
	defer cancel()
	token, err := bumpclient.IDToken(ctx, d.env, v.tokenEnv, v.audience)
	var setup *bumpclient.UsageError
	if errors.As(err, &setup) {
		return nil, command.Usage(err)
	}
	if err != nil {
		return nil, err
	}
	res, err := client.Bump(ctx, token, body)
	var refused *bumpclient.RefusedError
	if errors.As(err, &refused) && refused.Result != nil {
		// Opened but not merged (a lock, failed checks, the wait ran out).
		if perr := printBump(cmd, output, req.AutoMerge, refused.Result); perr != nil {
			return nil, perr
		}
		return nil, command.Exit(1, nil)
	}
	if err != nil {
		return nil, err
	}
	return res, printBump(cmd, output, req.AutoMerge, res)
}
