package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// decisionFlags are the flags approve and reject share.
type decisionFlags struct {
	server, env, planHash, tokenFile, approver, reason string
	wait                                               bool
	timeout                                            time.Duration
}

func newApproveCommand() *cobra.Command { return newDecisionCommand(true) }
func newRejectCommand() *cobra.Command  { return newDecisionCommand(false) }

// newDecisionCommand is `reconciler approve|reject --server URL --env ENV --plan-hash H`.
func newDecisionCommand(approve bool) *cobra.Command {
	var f decisionFlags
	verb, short := "reject", "Reject the plan pending in an environment"
	if approve {
		verb, short = "approve", "Approve the plan pending in an environment, which deploys it"
	}
	cmd := &cobra.Command{
		Use:   verb + " --server URL --env ENV --plan-hash H",
		Short: short,
		Long: short + `.
The plan hash binds the decision to exactly the changes you reviewed: if the
pending plan is another one now (a newer commit, a changed cluster), the
reconciler refuses and says what is pending instead. The token comes from
--token-file or $STAGEHAND_TOKEN; the server from --server or $STAGEHAND_SERVER.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, approve) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "URL of the reconciler's API (default $STAGEHAND_SERVER)")
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.StringVar(&f.planHash, "plan-hash", "", "planHash of the pending plan (required; see GET /api/v1/environments/ENV)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the API bearer token (default: $STAGEHAND_TOKEN)")
	fl.StringVar(&f.approver, "as", "", "who decides, for the history (default: the local user name)")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the server (and, with --wait, for the apply)")
	if approve {
		fl.BoolVar(&f.wait, "wait", false, "wait until the apply has finished and print its result (exit 1 if it failed)")
	} else {
		fl.StringVar(&f.reason, "reason", "", "why, for the history")
	}
	return cmd
}

func (f *decisionFlags) run(cmd *cobra.Command, approve bool) error {
	if f.server == "" {
		f.server = os.Getenv("STAGEHAND_SERVER")
	}
	switch {
	case f.server == "":
		return usagef("--server is required (or set $STAGEHAND_SERVER)")
	case f.env == "":
		return usagef("--env is required")
	case f.planHash == "":
		return usagef("--plan-hash is required")
	}
	if u, err := url.Parse(f.server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--server %q: want an http(s) URL such as http://localhost:8080", f.server)
	}
	token, err := f.token()
	if err != nil {
		return err
	}
	who := f.approver
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	verb := "reject"
	if approve {
		verb = "approve"
	}
	path := "/api/v1/environments/" + url.PathEscape(f.env) + "/" + verb
	code, body, err := f.call(ctx, http.MethodPost, path, token,
		api.DecisionRequest{PlanHash: f.planHash, Approver: who, Reason: f.reason})
	if err != nil {
		return err
	}
	if code != http.StatusOK && code != http.StatusAccepted {
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s refused (%d): %s\n", verb, code, apiMessage(body))
		return exitCode(1, nil)
	}
	var resp api.DecisionResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decoding the server's answer: %w", err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), resp.Message)
	if !approve || !f.wait {
		return nil
	}
	return f.waitApplied(ctx, cmd, token)
}

// waitApplied polls the history until the approved plan has a result.
func (f *decisionFlags) waitApplied(ctx context.Context, cmd *cobra.Command, token string) error {
	path := "/api/v1/environments/" + url.PathEscape(f.env) + "/history"
	for {
		code, body, err := f.call(ctx, http.MethodGet, path, token, nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("reading history: %d %s", code, apiMessage(body))
		}
		var h struct{ History []approval.Entry }
		if err := json.Unmarshal(body, &h); err != nil {
			return fmt.Errorf("decoding history: %w", err)
		}
		for _, e := range h.History {
			if e.PlanHash != f.planHash || e.Result == approval.ResultRejected || e.Result == approval.ResultInterrupted {
				continue
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: revision %s %s in %s\n", f.env, e.Revision, e.Result,
				e.Finished.Sub(e.Started).Round(time.Millisecond))
			if e.Result != approval.ResultSucceeded {
				fmt.Fprintln(cmd.ErrOrStderr(), "Error:", e.Message)
				return exitCode(1, nil)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the apply of %s: %w", f.planHash, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (f *decisionFlags) token() (string, error) {
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", usagef("--token-file: %s is empty", f.tokenFile)
	}
	if t := strings.TrimSpace(os.Getenv("STAGEHAND_TOKEN")); t != "" {
		return t, nil
	}
	return "", usagef("a token is required: pass --token-file or set $STAGEHAND_TOKEN")
}

func (f *decisionFlags) call(ctx context.Context, method, path, token string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(f.server, "/")+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is already in the message below
		}
		return 0, nil, fmt.Errorf("%s %s%s: %w", method, f.server, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// apiMessage returns the "error" field of an API error body, or the body.
func apiMessage(b []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(b))
}
