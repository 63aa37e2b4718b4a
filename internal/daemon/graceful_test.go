package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/lease"
)

// TestGracefulLeaseLost: the apply grace is given to an apply whose
// replica shuts down, never to one whose replica lost its Lease (another
// may be applying already): that one is cancelled before its next patch.
func TestGracefulLeaseLost(t *testing.T) {
	for _, c := range []struct {
		name   string
		cause  error
		atOnce bool
	}{
		{"shutdown", nil, false},
		{"lease lost", lease.ErrLost, true},
		{"lease lost, wrapped", errors.Join(errors.New("state claimed"), lease.ErrLost), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			grace := time.Hour
			ctx, cancel := context.WithCancelCause(context.Background())
			gctx, stop := graceful(ctx, grace)
			defer stop()
			cancel(c.cause)
			if c.atOnce {
				select {
				case <-gctx.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the apply's context still lives after the Lease was lost")
				}
				return
			}
			select {
			case <-gctx.Done():
				t.Fatal("the apply's context was cancelled at shutdown, before its grace")
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}
