package daemon

import (
	"context"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

var _ approval.BreakGlasser = (*Daemon)(nil)

// BreakGlass lets env's waiting plan planHash (pending approval, or a skipConfirmation plan the windows
// deferred) through its closed deploy windows, once, as who, with reason (approval.BreakGlasser;
// window.Guard.BreakGlass keeps it beside the plan in the state, on any replica). The worker of the
// replica that works env sees it within a second (decision.Desk.PickUp) and applies the plan if it has its approvals.
func (ds *dispatcher) BreakGlass(ctx context.Context, env, planHash string, why approval.Why) (*approval.Pending, error) {
	w, ok := ds.workers[env]
	if !ok {
		return nil, fmt.Errorf("%w %q; configured: %v", approval.ErrUnknownEnvironment, env, ds.envNames)
	}
	reason, err := approval.CheckReason(why.Reason)
	if err != nil {
		return nil, err
	}
	p, err := w.windows.BreakGlass(ctx, ds.store, planHash, approval.Why{By: why.By, Reason: reason})
	if err != nil {
		return nil, err
	}
	if ds.leads(env) {
		w.WakeUp()
	}
	return p, nil
}
