package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// promoteStep promotes j's Rollout, judged paused for a promotion (st),
// once per pause: a pause promoted already, which a cache a moment behind
// may still show, is not promoted again, and one the controller writes
// again is. workload.PromoteRollout reads the Rollout afresh and promotes
// it as `kubectl argo rollouts promote` does if it is still in that pause;
// when it is not (promoted or paused by someone meanwhile) or the promotion
// fails, the next round judges again. The first promotion at a step is
// reported and recorded in an Event naming who approved the plan; a failed
// one is reported.
func (run *applyRun) promoteStep(ctx context.Context, j *job, st workload.Status) {
	if j.promoted == st.Pause {
		return
	}
	key := types.NamespacedName{Namespace: j.key.Namespace, Name: j.key.Name}
	ok, err := workload.PromoteRollout(ctx, j.target.cluster(), key, st.Pause)
	if err != nil {
		run.report(j, PhaseRollingOut, fmt.Sprintf("%s: %v", st.Message, err))
		return
	}
	if !ok {
		return
	}
	j.promoted = st.Pause
	if j.promotedAt == st.Message {
		return
	}
	j.promotedAt = st.Message
	run.event(ctx, j, workloadEvent{corev1.EventTypeNormal, "Promoted", fmt.Sprintf("Promoted revision %s (%s): environments.<env>.rollouts.promote is auto; plan approved by %s",
		gitsource.ShortRevision(run.req.Revision), st.Message, run.a.o.approvedBy)})
	run.report(j, PhaseRollingOut, "promoted: "+st.Message)
}
