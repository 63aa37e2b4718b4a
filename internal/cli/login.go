package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
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

// deviceCode is GitHub's answer to POST /login/device/code.
type deviceCode struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int    `json:"expires_in"`
	Interval        int    `json:"interval"`
	Error           string `json:"error"`
	Description     string `json:"error_description"`
}

// tokenAnswer is GitHub's answer to a poll of POST /login/oauth/access_token.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	Error       string `json:"error"`
	Description string `json:"error_description"`
	Interval    int    `json:"interval"`
}

func (f *loginFlags) run(cmd *cobra.Command) error {
	if f.clientID == "" {
		f.clientID = os.Getenv("STAGEHAND_GITHUB_CLIENT_ID")
	}
	if f.clientID == "" {
		return usagef("--client-id is required (or set $STAGEHAND_GITHUB_CLIENT_ID): the OAuth client ID your operators configured for the device flow")
	}
	if u, err := url.Parse(f.githubURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--github-url %q: want an http(s) URL such as https://github.com", f.githubURL)
	}
	path, err := loginTokenPath(os.LookupEnv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	var dc deviceCode
	if err := f.post(ctx, "/login/device/code", url.Values{"client_id": {f.clientID}, "scope": {f.scope}}, &dc); err != nil {
		return err
	}
	if dc.Error != "" || dc.DeviceCode == "" {
		return fmt.Errorf("asking GitHub for a device code: %s %s", dc.Error, dc.Description)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "First copy your one-time code: %s\nThen open %s and enter it.\n", dc.UserCode, dc.VerificationURI)
	interval := time.Duration(max(dc.Interval, 1)) * time.Second
	poll := url.Values{"client_id": {f.clientID}, "device_code": {dc.DeviceCode}, "grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the code to be entered: %w", ctx.Err())
		case <-time.After(interval):
		}
		var ta tokenAnswer
		if err := f.post(ctx, "/login/oauth/access_token", poll, &ta); err != nil {
			return err
		}
		switch ta.Error {
		case "":
			if ta.AccessToken == "" {
				return fmt.Errorf("GitHub answered without a token")
			}
			if err := saveLoginToken(path, ta.AccessToken); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Logged in. The token is saved in %s.\n", path)
			return nil
		case "authorization_pending":
		case "slow_down":
			// GitHub says how long to wait from now on; without a figure, five seconds more (RFC 8628).
			if ta.Interval > 0 {
				interval = time.Duration(ta.Interval) * time.Second
			} else {
				interval += 5 * time.Second
			}
		case "expired_token":
			return fmt.Errorf("the code expired before it was entered: run reconciler login again")
		case "access_denied":
			return fmt.Errorf("the authorisation was declined on GitHub")
		default:
			return fmt.Errorf("logging in: GitHub answered %s: %s", ta.Error, ta.Description)
		}
	}
}

// post sends form to GitHub's path and decodes the JSON answer into out.
func (f *loginFlags) post(ctx context.Context, path string, form url.Values, out any) error {
	u := strings.TrimRight(f.githubURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: decoding the answer: %w", u, err)
	}
	return nil
}
