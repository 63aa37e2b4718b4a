package workload

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPromotePatches holds the promotion to `kubectl argo rollouts promote`
// (argo-rollouts v1.10.1, promote.go's getPatches without --full): the
// pause conditions cleared on the status subresource, spec.paused cleared
// on the Rollout when set, and the current step moved on, never past the
// last, after an inconclusive analysis the controller paused or in the
// middle of a step that is not a pause.
func TestPromotePatches(t *testing.T) {
	step := func(i int32) *int32 { return &i }
	steps := func(n int) *argoCanary {
		c := &argoCanary{}
		for range n {
			c.Steps = append(c.Steps, json.RawMessage(`{"pause":{}}`))
		}
		return c
	}
	pausedAt := []argoPause{{Reason: "CanaryPauseStep", StartTime: "2026-11-29T06:00:00Z"}}
	inconclusiveRun := func(o *argoRollout) {
		o.Status.Canary.CurrentStepAnalysisRunStatus = &struct {
			Status string `json:"status,omitempty"`
		}{Status: inconclusive}
		o.Status.PauseConditions = []argoPause{{Reason: pauseReasonInconclusiveAnalysisRun}}
		o.Status.ControllerPause = true
	}
	for _, tc := range []struct {
		name         string
		set          func(*argoRollout)
		spec, status string
	}{
		{"paused at a canary step", func(o *argoRollout) {
			o.Spec.Strategy.Canary, o.Status.CurrentStepIndex, o.Status.PauseConditions, o.Status.ControllerPause = steps(3), step(1), pausedAt, true
		}, "", `{"status":{"pauseConditions":null}}`},
		{"paused by spec too", func(o *argoRollout) {
			o.Spec.Paused = true
			o.Spec.Strategy.Canary, o.Status.CurrentStepIndex, o.Status.PauseConditions = steps(3), step(1), pausedAt
		}, `{"spec":{"paused":false}}`, `{"status":{"pauseConditions":null}}`},
		{"blue-green pause", func(o *argoRollout) {
			o.Status.PauseConditions = []argoPause{{Reason: "BlueGreenPause"}}
		}, "", `{"status":{"pauseConditions":null}}`},
		{"inconclusive analysis step", func(o *argoRollout) {
			o.Spec.Strategy.Canary, o.Status.CurrentStepIndex = steps(3), step(1)
			inconclusiveRun(o)
		}, "", `{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":2}}`},
		{"inconclusive at the end", func(o *argoRollout) {
			o.Spec.Strategy.Canary, o.Status.CurrentStepIndex = steps(3), step(3)
			inconclusiveRun(o)
		}, "", `{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":3}}`},
		{"inconclusive without controllerPause", func(o *argoRollout) {
			o.Spec.Strategy.Canary, o.Status.CurrentStepIndex = steps(3), step(1)
			inconclusiveRun(o)
			o.Status.ControllerPause = false
		}, "", `{"status":{"pauseConditions":null}}`},
		{"in the middle of a step", func(o *argoRollout) {
			o.Spec.Strategy.Canary, o.Status.CurrentStepIndex = steps(3), step(1)
		}, "", `{"status":{"pauseConditions":null,"currentStepIndex":2}}`},
		{"no step index yet", func(o *argoRollout) { o.Spec.Strategy.Canary = steps(3) },
			"", `{"status":{"pauseConditions":null,"currentStepIndex":1}}`},
		{"canary without steps", func(o *argoRollout) { o.Spec.Strategy.Canary = steps(0) }, "", ""},
		{"paused by spec only", func(o *argoRollout) { o.Spec.Paused = true }, `{"spec":{"paused":false}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &argoRollout{}
			tc.set(o)
			spec, status := promotePatches(o)
			if diff := cmp.Diff([]string{tc.spec, tc.status}, []string{string(spec), string(status)}); diff != "" {
				t.Errorf("patches [spec, status] (-want +got):\n%s", diff)
			}
			for _, p := range [][]byte{spec, status} {
				if p != nil && !json.Valid(p) {
					t.Errorf("patch %s is not JSON", p)
				}
			}
		})
	}
}
