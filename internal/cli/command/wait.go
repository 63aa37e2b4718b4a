package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/waiter"
)

// DeployWait is one wait for a deploy through the reconciler's API, read
// every interval and judged by internal/waiter: `reconciler wait`'s, and
// `prbot bump --wait`'s once the bump is merged. ctx's deadline is the end
// of the wait (timeout is only said); it prints progress lines on cmd's
// stdout and exits as `reconciler wait` does: 0 deployed, 1 failed,
// rejected, rolled back, superseded or refused, 2 timed out.
type DeployWait struct {
	Client            *api.Client
	Env               string
	Judge             *waiter.Judge
	Interval, Timeout time.Duration
	// Out takes the progress lines (nil: cmd's stdout).
	Out io.Writer
}

// Run waits (see DeployWait).
func (w DeployWait) Run(ctx context.Context, cmd *cobra.Command) error {
	out := w.Out
	if out == nil {
		out = cmd.OutOrStdout()
	}
	last := ""
	for {
		v, err := w.Client.Environment(ctx, w.Env)
		var refusal *api.Error
		switch {
		case err == nil:
			verdict := w.Judge.Judge(v)
			if verdict.Message != last {
				fmt.Fprintf(out, "%s %s: %s\n", time.Now().UTC().Format(time.TimeOnly), w.Env, verdict.Message)
				last = verdict.Message
			}
			if verdict.Done {
				if verdict.Code() != 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s: %s\n", verdict.Outcome, verdict.Message)
				}
				return Exit(verdict.Code(), nil)
			}
		case ctx.Err() != nil:
		case errors.As(err, &refusal) && refusal.Status != http.StatusTooManyRequests && refusal.Status < 500:
			// An unknown environment, a token refused: waiting longer does not help.
			return Refused(cmd, "reading environment "+w.Env, err)
		default:
			// The server restarting or unreachable for a moment: keep waiting.
			if msg := "reading the environment: " + err.Error(); msg != last {
				fmt.Fprintf(out, "%s %s: %s\n", time.Now().UTC().Format(time.TimeOnly), w.Env, msg)
				last = msg
			}
		}
		select {
		case <-ctx.Done():
			if cmd.Context().Err() != nil {
				return cmd.Context().Err()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Error: timed out after %s: %s\n", w.Timeout, last)
			return Exit(2, nil)
		case <-time.After(w.Interval):
		}
	}
}

// ReadTimeout bounds each read of the environment.
const ReadTimeout = 30 * time.Second
