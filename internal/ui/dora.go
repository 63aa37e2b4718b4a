package ui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// doraWindow is the window of the environment page's DORA panel.
const doraWindow = 30 * 24 * time.Hour

// WithDORA computes the environment page's DORA panel with r (its git
// commits for lead times, its rollback window, its clock); without it the
// panel is computed by a Reporter that dates no commit, on the page's clock.
func WithDORA(r *dora.Reporter) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("nil DORA reporter")
		}
		o.dora = r
		return nil
	}
}

// doraView is the environment page's DORA panel: the report over the last
// 30 days of the environment's history.
type doraView struct {
	dora.Report
}

// doraPanel is e's panel, from the history its view holds.
func (s *Server) doraPanel(ctx context.Context, e *status.Environment) doraView {
	return doraView{Report: s.o.dora.Report(ctx, e.Name, e.History, doraWindow)}
}

// Percent is the change failure rate as people read it: "25%".
func (v doraView) Percent() string { return fmt.Sprintf("%.0f%%", 100*v.ChangeFailureRate) }

// PerDay is the deployment frequency: "0.30 a day", or per week when rare.
func (v doraView) PerDay() string {
	if v.DeploysPerDay > 0 && v.DeploysPerDay < 1 {
		return fmt.Sprintf("%.1f a week", 7*v.DeploysPerDay)
	}
	return fmt.Sprintf("%.1f a day", v.DeploysPerDay)
}

// Median says a summary's median as a rounded duration ("3h0m0s"), or "—".
func (doraView) Median(d dora.Durations) string {
	if d.Count == 0 {
		return "—"
	}
	return roundDuration(d.MedianSeconds)
}

// roundDuration writes seconds as a duration rounded to what matters.
func roundDuration(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}
