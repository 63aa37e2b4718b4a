package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/auth/login"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
)

// loginFlags are the flags of `reconciler login`.
type loginFlags struct {
	clientID, githubURL, scope string
	timeout                    time.Duration
}

// newLoginCommand is `reconciler login`: GitHub's OAuth device flow, the
// token saved for approve, reject, lock and the other API commands.
func newLoginCommand() *cobra.Command {
	var f loginFlags
	cmd := &cobra.Command{
		Use:   "login --client-id ID",
		Short: "Log in with GitHub (device flow) and save the token for the API commands",
		Long: `Log in with GitHub's OAuth device flow: the command prints a code and a URL,
you enter the code there and authorise the app, and the token GitHub then
issues is saved (readable by you only) under your configuration directory
($XDG_CONFIG_HOME/stagehand/token, ~/.config/stagehand/token). approve,
reject, lock and the other commands that call the reconciler's API send it
when no --token-file, $STAGEHAND_TOKEN, $GITHUB_TOKEN or gh login is there.
The reconciler learns your login from GitHub and applies its approver rule.

--client-id is the OAuth (or GitHub App) client ID with the device flow
enabled, from your operators (default $STAGEHAND_GITHUB_CLIENT_ID).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.clientID, "client-id", "", "OAuth client ID with the device flow enabled (default $STAGEHAND_GITHUB_CLIENT_ID)")
	fl.StringVar(&f.githubURL, "github-url", "https://github.com", "GitHub's web address (GitHub Enterprise Server: its host)")
	fl.StringVar(&f.scope, "scope", "", "OAuth scopes to ask for (none are needed: the reconciler only reads who you are)")
	fl.DurationVar(&f.timeout, "timeout", 15*time.Minute, "how long to wait for you to enter the code")
	return cmd
}

func (f *loginFlags) run(cmd *cobra.Command) error {
	if f.clientID == "" {
		f.clientID = os.Getenv("STAGEHAND_GITHUB_CLIENT_ID")
	}
	if f.clientID == "" {
		return command.Usagef("--client-id is required (or set $STAGEHAND_GITHUB_CLIENT_ID): the OAuth client ID your operators configured for the device flow")
	}
	if u, err := url.Parse(f.githubURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return command.Usagef("--github-url %q: want an http(s) URL such as https://github.com", f.githubURL)
	}
	flow, err := login.NewDeviceFlow(f.githubURL, f.clientID, login.WithScope(f.scope))
	if err != nil {
		return command.Usagef("%v", err)
	}
	path, err := login.TokenPath(os.LookupEnv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	code, err := flow.Start(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "First copy your one-time code: %s\nThen open %s and enter it.\n", code.UserCode, code.VerificationURI)
	tok, err := flow.Wait(ctx, code)
	switch {
	case errors.Is(err, login.ErrExpired):
		return fmt.Errorf("%w: run reconciler login again", err)
	case err != nil:
		return err
	}
	if err := login.SaveToken(path, tok); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Logged in. The token is saved in %s.\n", path)
	return nil
}
