package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

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

// bump posts req to the bump API and prints the answer like a local bump.
func (v *viaFlags) bump(cmd *cobra.Command, d prbotDeps, req prbot.BumpRequest, output string) error {
	if output != "text" && output != "json" {
		return usagef("invalid --output %q: want text or json", output)
	}
	for _, name := range []string{"repo", "token-file", "app-id", "installation-id", "private-key-file", "lock-server", "lock-token-file", "require-check", "merge-method", "poll-interval"} {
		if cmd.Flags().Changed(name) {
			return usagef("--%s does not apply with --via: prbot serve's configuration decides", name)
		}
	}
	endpoint, err := bumpsURL(v.url)
	if err != nil {
		return err
	}
	body := prbot.BumpBody{Environment: req.Env, Service: req.Service, Container: req.Container, Tag: req.Tag, Digest: req.Digest, File: req.File, AutoMerge: req.AutoMerge}
	wait := time.Duration(0)
	if req.AutoMerge {
		wait = prbot.DefaultBumpMergeWait
		if cmd.Flags().Changed("merge-timeout") {
			if req.MergeTimeout > prbot.MaxBumpMergeWait {
				return usagef("--merge-timeout %s: with --via at most %s", req.MergeTimeout, prbot.MaxBumpMergeWait)
			}
			body.MergeTimeout, wait = req.MergeTimeout.String(), req.MergeTimeout
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), viaTimeout+wait)
	defer cancel()
	token, err := v.idToken(ctx, d)
	if err != nil {
		return err
	}
	res, err := postBump(ctx, endpoint, token, body)
	var refused *bumpRefused
	if errors.As(err, &refused) && refused.Result != nil {
		// Opened but not merged (a lock, failed checks, the wait ran out).
		if perr := printBump(cmd, output, req.AutoMerge, refused.Result); perr != nil {
			return perr
		}
		return exitCode(1, nil)
	}
	if err != nil {
		return err
	}
	return printBump(cmd, output, req.AutoMerge, res)
}

// bumpsURL is the bump API under base; the token is a credential, so only
// https leaves the machine.
func bumpsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", usagef("--via %q: want the URL of prbot serve, e.g. https://prbot.example.com", base)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return "", usagef("--via %q: the ID token is a credential; want https (http only to localhost)", base)
	}
	return strings.TrimRight(u.String(), "/") + prbot.BumpsPath, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// idToken gets the CI job's OIDC ID token: the variable --token-env names,
// else GitHub Actions' token request service, else $STAGEHAND_ID_TOKEN.
func (v *viaFlags) idToken(ctx context.Context, d prbotDeps) (string, error) {
	if v.tokenEnv != "" {
		if t := strings.TrimSpace(d.env(v.tokenEnv)); t != "" {
			return t, nil
		}
		return "", usagef("--token-env %s: $%s is empty; on GitLab CI define it with id_tokens: {%s: {aud: stagehand}}", v.tokenEnv, v.tokenEnv, v.tokenEnv)
	}
	if reqURL := d.env("ACTIONS_ID_TOKEN_REQUEST_URL"); reqURL != "" {
		return githubIDToken(ctx, reqURL, d.env("ACTIONS_ID_TOKEN_REQUEST_TOKEN"), v.audience)
	}
	if t := strings.TrimSpace(d.env("STAGEHAND_ID_TOKEN")); t != "" {
		return t, nil
	}
	if d.env("GITHUB_ACTIONS") == "true" {
		return "", usagef("no $ACTIONS_ID_TOKEN_REQUEST_URL: give the job permissions: id-token: write")
	}
	return "", usagef("no CI ID token: on GitHub Actions give the job permissions: id-token: write; on GitLab CI define id_tokens: {STAGEHAND_ID_TOKEN: {aud: stagehand}} (or name the variable with --token-env)")
}

// githubIDToken asks GitHub Actions' token service for an ID token with
// the audience (what actions/core getIDToken does).
func githubIDToken(ctx context.Context, reqURL, reqToken, audience string) (string, error) {
	if reqToken == "" {
		return "", usagef("$ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set: give the job permissions: id-token: write")
	}
	u, err := url.Parse(reqURL)
	if err != nil {
		return "", fmt.Errorf("requesting an ID token: $ACTIONS_ID_TOKEN_REQUEST_URL: %w", err)
	}
	q := u.Query()
	q.Set("audience", audience)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("requesting an ID token: %w", err)
	}
	req.Header.Set("Authorization", "bearer "+reqToken)
	req.Header.Set("Accept", "application/json; api-version=2.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("requesting an ID token from GitHub Actions: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("requesting an ID token from GitHub Actions: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("requesting an ID token from GitHub Actions: %s", resp.Status)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Value == "" {
		return "", errors.New("requesting an ID token from GitHub Actions: the answer holds no token")
	}
	return out.Value, nil
}

// bumpRefused is a non-200 answer of the bump API.
type bumpRefused struct {
	Status int
	prbot.BumpError
}

func (e *bumpRefused) Error() string {
	return fmt.Sprintf("bump refused by prbot serve (%d %s): %s", e.Status, e.Reason, e.BumpError.Error)
}

// noRedirects sends the ID token to the --via URL only: Go's client keeps
// the Authorization header on a redirect to the same host name, another
// port or plain http included.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func postBump(ctx context.Context, endpoint, token string, body prbot.BumpBody) (*prbot.BumpResult, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the bump: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("posting the bump: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := noRedirects.Do(req)
	if err != nil {
		return nil, fmt.Errorf("posting the bump: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the bump's answer: %w", err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("posting the bump to %s: %s to %q: not followed (the ID token would go along); give --via the final URL", endpoint, resp.Status, resp.Header.Get("Location"))
	}
	if resp.StatusCode != http.StatusOK {
		r := &bumpRefused{Status: resp.StatusCode}
		if err := json.Unmarshal(out, &r.BumpError); err != nil || r.BumpError.Error == "" {
			return nil, fmt.Errorf("posting the bump to %s: %s", endpoint, resp.Status)
		}
		return nil, r
	}
	var res prbot.BumpResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("decoding the bump's answer: %w", err)
	}
	return &res, nil
}
