package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// CodeInvalidWindow is the code of a DORA report's window refused
// (dora.ErrWindow).
const CodeInvalidWindow = "InvalidWindow"

// WithDORA computes GET /api/v1/environments/{env}/dora with r (its git
// commits for lead times, its rollback window, its clock); without it the
// route answers with a Reporter that dates no commit.
func WithDORA(r *dora.Reporter) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("nil DORA reporter")
		}
		o.dora = r
		return nil
	}
}

// getDORA is GET /api/v1/environments/{env}/dora?window=30d: the four DORA
// figures over the window, from the environment's history.
func (h *handlers) getDORA(w http.ResponseWriter, r *http.Request) {
	env := r.PathValue("env")
	windows := r.URL.Query()["window"]
	if len(windows) > 1 {
		fail(w, refuse(kindBadRequest, "window given %d times: give it once", len(windows)))
		return
	}
	raw := ""
	if len(windows) == 1 {
		raw = windows[0]
	}
	window, err := dora.ParseWindow(raw)
	if err != nil {
		fail(w, err)
		return
	}
	history, err := h.b.History(r.Context(), env)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.o.dora.Report(r.Context(), env, history, window))
}

// DORA is GET /api/v1/environments/{env}/dora: env's DORA figures over
// window ("30d", "2w", "36h"; "" is the server's default, 30 days).
func (c *Client) DORA(ctx context.Context, env, window string) (*dora.Report, error) {
	p, err := envPath(env, "/dora")
	if err != nil {
		return nil, err
	}
	if window != "" {
		p += "?window=" + url.QueryEscape(window)
	}
	var out dora.Report
	if err := c.do(ctx, request{method: http.MethodGet, path: p}, &out); err != nil {
		return nil, fmt.Errorf("reading the DORA figures of %s: %w", env, err)
	}
	return &out, nil
}
