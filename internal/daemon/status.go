package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// writeStatus records what a pass observed at s, when it differs from the
// last write; EndPass is its one caller.
func (w *worker) writeStatus(ctx context.Context, s gitsource.Snapshot, o *pass.Observation) {
	st := status.Observe(s, status.Planned{Env: o.EnvM, Plan: o.Plan, Err: o.Err}, w.statusTargets)
	st.Waiting = w.waiting(o.Plan)
	cmp, err := json.Marshal(st)
	if err == nil && bytes.Equal(cmp, w.lastStatus) {
		return
	}
	st.ObservedAt = w.now().UTC()
	raw, rerr := json.Marshal(st)
	if err = errors.Join(err, rerr); err != nil {
		w.metrics.Fail(w.env, meter.ReasonState)
		w.log.Error(err, "encoding status", "environment", w.env)
		return
	}
	if err := w.store.SetStatus(ctx, w.env, raw); err != nil {
		w.metrics.Fail(w.env, meter.ReasonState)
		w.log.Error(err, "recording status", "environment", w.env)
		return
	}
	w.lastStatus = cmp
}

// waiting names the faults env is waiting out: the source failing (its
// last good revision is what is planned), the gate refused for a rate
// limit (until it ends), and targets plan could not reach.
func (w *worker) waiting(plan *reconcile.Plan) []string {
	var out []string
	if rl := w.tell.Limited(); rl != nil {
		out = append(out, fmt.Sprintf("%s rate limited until %s", rl.Service, rl.Until.UTC().Format(time.RFC3339)))
	}
	if w.source != nil {
		if src := w.source.Status(); src.Failures > 0 {
			out = append(out, fmt.Sprintf("source unreachable since %s: %s", src.FailingSince.UTC().Format(time.RFC3339), src.LastError))
		}
	}
	if plan != nil {
		for _, t := range plan.UnreachableTargets() {
			for _, pr := range plan.Problems {
				if pr.Unreachable && pr.Target == t {
					out = append(out, "API server of target "+t+" unreachable: "+pr.Message)
					break
				}
			}
		}
	}
	return out
}
