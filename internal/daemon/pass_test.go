package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/internal/pass"
)

// TestRunSteps: the steps run in order over one pass until one sets done or
// fails; each is timed (stagehand_step_duration_seconds), and a failure is
// counted under its step's reason, once. It starts nothing.
func TestRunSteps(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		doneAt   pass.StepName // sets done
		failAt   pass.StepName
		failWith error
		wantRun  []pass.StepName
		wantFail map[meter.Reason]float64
	}{
		{name: "all", wantRun: pass.StepNames},
		{name: "done at the gate", doneAt: pass.StepGate, wantRun: pass.StepNames[:4]},
		{name: "plan fails", failAt: pass.StepPlan, failWith: pass.Failed(pass.StepPlan, meter.ReasonPlan, boom), wantRun: pass.StepNames[:3],
			wantFail: map[meter.Reason]float64{meter.ReasonPlan: 1}},
		{name: "a state write fails in the apply", failAt: pass.StepApply, failWith: pass.Failed(pass.StepApply, meter.ReasonState, boom),
			wantRun: pass.StepNames[:5], wantFail: map[meter.Reason]float64{meter.ReasonState: 1}},
		{name: "an error without a reason is not counted", failAt: pass.StepRecord, failWith: boom, wantRun: pass.StepNames},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(workerDeps{env: "prod", metrics: meter.New(nil), log: logr.Discard()})
			var ran []pass.StepName
			var steps []pass.Step
			for _, n := range pass.StepNames {
				steps = append(steps, pass.Step{Name: n, Run: func(_ context.Context, p *pass.Pass) error {
					ran = append(ran, n)
					p.Done = n == tc.doneAt
					if n == tc.failAt {
						return tc.failWith
					}
					return nil
				}})
			}
			p := &pass.Pass{}
			err := w.runSteps(context.Background(), p, steps)
			if !errors.Is(err, tc.failWith) {
				t.Errorf("runSteps = %v, want %v", err, tc.failWith)
			}
			if diff := cmp.Diff(tc.wantRun, ran); diff != "" {
				t.Errorf("steps run (-want +got):\n%s", diff)
			}
			var timed []pass.StepName
			for _, st := range p.Times {
				timed = append(timed, st.Step)
			}
			if diff := cmp.Diff(tc.wantRun, timed); diff != "" {
				t.Errorf("steps timed in the pass (-want +got):\n%s", diff)
			}
			if got := seriesCount(t, w.metrics, "stagehand_step_duration_seconds"); got != len(tc.wantRun) {
				t.Errorf("stagehand_step_duration_seconds has %d series, want one per step run (%d)", got, len(tc.wantRun))
			}
			for _, r := range []meter.Reason{meter.ReasonFetch, meter.ReasonResolve, meter.ReasonPlan, meter.ReasonApply, meter.ReasonState, meter.ReasonGate, meter.ReasonRollback} {
				if got := metricValue(t, w.metrics, "stagehand_failures_total", "environment=prod", "stage="+string(r)); got != tc.wantFail[r] {
					t.Errorf("stagehand_failures_total{stage=%q} = %v, want %v", r, got, tc.wantFail[r])
				}
			}
			if err != nil && !strings.Contains(err.Error(), "boom") {
				t.Errorf("step error %q does not say why", err)
			}
		})
	}
}
