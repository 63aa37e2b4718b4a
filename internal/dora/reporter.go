package dora

import (
	"context"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// Reporter computes reports over the history an API call read.
type Reporter struct {
	o options
}

// NewReporter returns a Reporter.
func NewReporter(opts ...Option) (*Reporter, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Reporter{o: o}, nil
}

// Report is env's report over the window ending now, from history (newest
// first). Only the deploys in the window are dated through git.
func (r *Reporter) Report(ctx context.Context, env string, history []approval.Entry, window time.Duration) Report {
	span := Span{Environment: env, Window: window, To: r.o.now().UTC(), RollbackWindow: r.o.rollbackWindow}
	from := span.To.Add(-window)
	var in []Deploy
	for _, d := range Deploys(history, r.o.rollbackWindow) {
		if !d.Entry.Finished.Before(from) && !d.Entry.Finished.After(span.To) {
			in = append(in, d)
		}
	}
	return Compute(history, FirstCommits(ctx, in, r.o.commits), span)
}
