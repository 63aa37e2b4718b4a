package daemon

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// FirstDelivery records a webhook delivery that reached an approval path
// (approval.Deliveries) in the record every replica shares
// (state.Deliveries, ConfigMap stagehand-deliveries) and reports whether it
// is new: a delivery whose ID or body was recorded before, by this replica
// or another, before a restart or after, is not.
func (vw *views) FirstDelivery(ctx context.Context, dl approval.Delivery) (bool, error) {
	return vw.deliveries.First(ctx, dl)
}

// ForgetDelivery removes a delivery recorded by FirstDelivery whose
// handling failed before it changed anything (approval.Deliveries).
func (vw *views) ForgetDelivery(ctx context.Context, dl approval.Delivery) error {
	return vw.deliveries.Forget(ctx, dl)
}

var _ approval.Deliveries = (*Daemon)(nil)
