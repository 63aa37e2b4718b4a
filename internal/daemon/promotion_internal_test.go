package daemon

import (
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestPromotionOf: an environment's applies promote a Rollout paused at a
// step only with rollouts.promote auto.
func TestPromotionOf(t *testing.T) {
	for _, tc := range []struct {
		rollouts *config.Rollouts
		want     reconcile.Promotion
	}{
		{nil, reconcile.PromotionWait},
		{&config.Rollouts{}, reconcile.PromotionWait},
		{&config.Rollouts{Promote: config.RolloutsPromoteWait}, reconcile.PromotionWait},
		{&config.Rollouts{Promote: config.RolloutsPromoteAuto}, reconcile.PromotionAuto},
	} {
		if got := PromotionOf(config.Environment{Rollouts: tc.rollouts}); got != tc.want {
			t.Errorf("PromotionOf(rollouts %+v) = %q, want %q", tc.rollouts, got, tc.want)
		}
	}
}
