package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// promoteAgain is how long after promoting a paused step the promotion is
// sent again while the Rollout still shows it paused there: a promotion
// written in the instant the controller writes the pause (from its cache)
// can be lost, as `kubectl argo rollouts promote` can.
const promoteAgain = 2 * time.Second

// promoteDelay is how long a Rollout is seen paused at a step before it is
// promoted: a promotion in the instant the controller writes the pause is
// lost to its next status write.
const promoteDelay = time.Second

// anyPaused reports whether a pending job's last status is a pause for a
// promotion.
func anyPaused(pending map[WorkloadKey]*job, last map[WorkloadKey]string) bool {
	for k := range pending {
		if strings.HasSuffix(last[k], workload.PausedForPromotion) {
			return true
		}
	}
	return false
}

// promoteStep promotes j's Rollout, paused at step msg, unless it was
// promoted at that step less than promoteAgain ago; the first promotion of
// a step is reported and recorded in an Event, a failed one reported.
func (r *Reconciler) promoteStep(ctx context.Context, req Request, j *job, msg string, report func(*job, Phase, string)) {
	first := j.promotedAt != msg
	if !first && time.Since(j.promoted) < promoteAgain {
		return
	}
	if first { // the controller may still be writing the pause: a promotion now would be lost
		select {
		case <-ctx.Done():
			return
		case <-time.After(promoteDelay):
		}
	}
	j.promoted, j.promotedAt = time.Now(), msg
	if err := r.promote(ctx, j); err != nil {
		report(j, PhaseRollingOut, fmt.Sprintf("%s: %v", msg, err))
		return
	}
	if first {
		r.event(ctx, req, j, corev1.EventTypeNormal, "Promoted", fmt.Sprintf("Promoted revision %s (%s): environments.<env>.rollouts.promote is auto; plan approved by %s",
			short(req.Revision), msg, r.o.approvedBy))
		report(j, PhaseRollingOut, "promoted: "+msg)
	}
}

// promotePatch is what `kubectl argo rollouts promote` patches into the status
// of a Rollout paused at a step: its pause conditions cleared.
const promotePatch = `{"status":{"pauseConditions":null}}`

// promote promotes the Rollout of j as `kubectl argo rollouts promote` does
// a Rollout paused at a step: its status's pause conditions cleared.
func (r *Reconciler) promote(ctx context.Context, j *job) error {
	if j.target.Dynamic == nil {
		return errors.New("promoting: no dynamic client")
	}
	_, err := j.target.Dynamic.Resource(RolloutGVR).Namespace(j.key.Namespace).Patch(ctx, j.key.Name, types.MergePatchType,
		[]byte(promotePatch), metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("promoting Rollout %s/%s: %w", j.key.Namespace, j.key.Name, err)
	}
	return nil
}
