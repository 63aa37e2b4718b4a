package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pauseOf names the pause o waits in: each pause condition's reason and
// start time. The controller writes a new start time whenever it pauses
// again, so a promotion is sent once per pause, never twice for one pause
// a cache a moment behind still shows.
func pauseOf(o *argoRollout) string {
	var out []string
	for _, c := range o.Status.PauseConditions {
		out = append(out, c.Reason+"@"+c.StartTime)
	}
	return strings.Join(out, ",")
}

// The patches of `kubectl argo rollouts promote` (argo-rollouts v1.10.1,
// pkg/kubectl-argo-rollouts/cmd/promote/promote.go), without --full.
const (
	unpausePatch                       = `{"spec":{"paused":false}}`
	clearPauseConditionsPatch          = `{"status":{"pauseConditions":null}}`
	clearPauseAndControllerPausePatch  = `{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":%d}}`
	clearPauseConditionsWithStepPatch  = `{"status":{"pauseConditions":null,"currentStepIndex":%d}}`
	inconclusive                       = "Inconclusive"
	pauseReasonInconclusiveAnalysisRun = "InconclusiveAnalysisRun"
)

// promotePatches are the merge patches `kubectl argo rollouts promote`
// sends o, a Rollout whose controller uses the status subresource: spec for
// the Rollout (spec.paused cleared when set), status for its status (nil:
// none). On the status: after an inconclusive canary analysis that the
// controller paused, the pause conditions and controllerPause cleared and
// the next step set; else, while pause conditions are set, those cleared;
// else, for a canary with steps (in the middle of an analysis or an
// experiment), the pause conditions cleared and the next step set.
func promotePatches(o *argoRollout) (spec, status []byte) {
	if o.Spec.Paused {
		spec = []byte(unpausePatch)
	}
	st := o.Status
	c := o.Spec.Strategy.Canary
	// replicasetutil.GetCurrentCanaryStep: the index (0 when unset) of a
	// canary with steps, none otherwise; kubectl moves it to the next
	// step, never past the last.
	next := func() (int32, bool) {
		if c == nil || len(c.Steps) == 0 {
			return 0, false
		}
		i := int32(0)
		if st.CurrentStepIndex != nil {
			i = *st.CurrentStepIndex
		}
		if i < int32(len(c.Steps)) {
			i++
		}
		return i, true
	}
	inconclusiveStep := c != nil && st.Canary.CurrentStepAnalysisRunStatus != nil && st.Canary.CurrentStepAnalysisRunStatus.Status == inconclusive
	switch {
	case inconclusiveStep && len(st.PauseConditions) > 0 && st.ControllerPause:
		if i, ok := next(); ok {
			status = fmt.Appendf(nil, clearPauseAndControllerPausePatch, i)
		}
	case len(st.PauseConditions) > 0:
		status = []byte(clearPauseConditionsPatch)
	case c != nil:
		if i, ok := next(); ok {
			status = fmt.Appendf(nil, clearPauseConditionsWithStepPatch, i)
		}
	}
	return spec, status
}

// PromoteRollout promotes Rollout key of c as `kubectl argo rollouts
// promote` does if it is still paused for a promotion in pause (the Pause
// of an earlier judgement, which may come from a cache a moment behind):
// the Rollout is read again from the API server and kubectl's patches
// (promotePatches) are sent, the status's first, with the field manager
// of every patch (FieldManager). It sends nothing and returns false when
// the Rollout is no longer in that pause: someone promoted or paused it
// meanwhile, or the controller moved on.
func PromoteRollout(ctx context.Context, c Cluster, key types.NamespacedName, pause string) (bool, error) {
	if c.Dynamic == nil {
		return false, errors.New("promoting: no dynamic client")
	}
	ri := c.Dynamic.Resource(RolloutGVR).Namespace(key.Namespace)
	u, err := ri.Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading Rollout %s before promoting it: %w", key, err)
	}
	o, err := toRollout(u)
	if err != nil {
		return false, err
	}
	if st := judgeRollout(o, 0); !st.Paused || st.Pause != pause {
		return false, nil
	}
	spec, status := promotePatches(o)
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	if status != nil {
		if _, err := ri.Patch(ctx, key.Name, types.MergePatchType, status, opts, "status"); err != nil {
			return false, fmt.Errorf("promoting Rollout %s: %w", key, err)
		}
	}
	if spec != nil {
		if _, err := ri.Patch(ctx, key.Name, types.MergePatchType, spec, opts); err != nil {
			return false, fmt.Errorf("promoting Rollout %s: %w", key, err)
		}
	}
	return true, nil
}
