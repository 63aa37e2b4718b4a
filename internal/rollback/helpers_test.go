package rollback

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// fakeReconciler is the reconciler's side of a rollback, kept in memory: a
// fixed history, and the pin, status and approval the test gives (nil: the
// pin is kept, the status is empty, approvals are refused).
type fakeReconciler struct {
	history     []approval.Entry
	pin         func(*approval.Pin) error
	environment func() *status.Environment
	approve     func(planHash string, who identity.Principal) (*approval.Pending, error)
}

func (f *fakeReconciler) History(context.Context, string) ([]approval.Entry, error) {
	return f.history, nil
}

func (f *fakeReconciler) Pin(_ context.Context, _ string, p *approval.Pin) error {
	if f.pin == nil {
		return nil
	}
	return f.pin(p)
}

func (f *fakeReconciler) Environment(context.Context, string) (*status.Environment, error) {
	if f.environment == nil {
		return &status.Environment{}, nil
	}
	return f.environment(), nil
}

func (f *fakeReconciler) Approve(_ context.Context, _, planHash string, who identity.Principal) (*approval.Pending, error) {
	if f.approve == nil {
		return nil, errors.New("no approvals in this test")
	}
	return f.approve(planHash, who)
}

// newRollbacker is the Rollbacker of one environment, prod, locked at
// apps/prod, holding for an hour and waiting a second for a pinned plan.
func newRollbacker(t *testing.T, bot *prbot.Bot, svc *lock.Service, rec Reconciler) *Rollbacker {
	t.Helper()
	rb, err := New(Parts{Bot: bot, Locks: svc, LockPaths: map[string]string{"prod": "apps/prod"}, Reconciler: rec}, WithHoldFor(time.Hour), WithPlanWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return rb
}
