package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/stagehand-gitops/stagehand/internal/meter"
)

// TestRunSteps: the steps run in order over one pass until one sets done or
// fails; each is timed (stagehand_step_duration_seconds), and a failure is
// counted under its step's reason, once. It starts nothing.
func TestRunSteps(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		doneAt   stepName // sets done
		failAt   stepName
		failWith error
		wantRun  []stepName
		wantFail map[reason]float64
	}{
		{name: "all", wantRun: stepNames},
		{name: "done at the gate", doneAt: stepGate, wantRun: stepNames[:4]},
		{name: "plan fails", failAt: stepPlan, failWith: failed(stepPlan, reasonPlan, boom), wantRun: stepNames[:3],
			wantFail: map[reason]float64{reasonPlan: 1}},
		{name: "a state write fails in the apply", failAt: stepApply, failWith: failed(stepApply, reasonState, boom),
			wantRun: stepNames[:5], wantFail: map[reason]float64{reasonState: 1}},
		{name: "an error without a reason is not counted", failAt: stepRecord, failWith: boom, wantRun: stepNames},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(workerDeps{env: "prod", metrics: meter.New(nil), log: logr.Discard()})
			var ran []stepName
			var steps []step
			for _, n := range stepNames {
				steps = append(steps, step{n, func(_ context.Context, p *pass) error {
					ran = append(ran, n)
					p.done = n == tc.doneAt
					if n == tc.failAt {
						return tc.failWith
					}
					return nil
				}})
			}
			p := &pass{}
			err := w.runSteps(context.Background(), p, steps)
			if !errors.Is(err, tc.failWith) {
				t.Errorf("runSteps = %v, want %v", err, tc.failWith)
			}
			if diff := cmp.Diff(tc.wantRun, ran); diff != "" {
				t.Errorf("steps run (-want +got):\n%s", diff)
			}
			var timed []stepName
			for _, st := range p.times {
				timed = append(timed, st.Step)
			}
			if diff := cmp.Diff(tc.wantRun, timed); diff != "" {
				t.Errorf("steps timed in the pass (-want +got):\n%s", diff)
			}
			if got := seriesCount(t, w.metrics, "stagehand_step_duration_seconds"); got != len(tc.wantRun) {
				t.Errorf("stagehand_step_duration_seconds has %d series, want one per step run (%d)", got, len(tc.wantRun))
			}
			for _, r := range []reason{reasonFetch, reasonResolve, reasonPlan, reasonApply, reasonState, reasonGate, reasonRollback} {
				if got := metricValue(t, w.metrics, "stagehand_failures_total", "environment=prod", "stage="+string(r)); got != tc.wantFail[r] {
					t.Errorf("stagehand_failures_total{stage=%q} = %v, want %v", r, got, tc.wantFail[r])
				}
			}
			var se *stepError
			if errors.As(err, &se) && !strings.Contains(se.Error(), "boom") {
				t.Errorf("step error %q does not say why", se)
			}
		})
	}
}
