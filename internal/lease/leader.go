package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	fluxle "github.com/fluxcd/pkg/runtime/leaderelection"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Name is the Lease the replicas compete for in the state namespace.
const Name = "stagehand-reconciler"

// ErrLost is the cause of a leader's (or an environment holder's) work
// context when its Lease was lost, not when it shuts down: the apply under
// way stops before its next patch instead of being given the apply grace.
var ErrLost = errors.New("this replica lost its lease")

// Election configures leader election; its fields are fluxcd's runtime
// options (and flags). Enable false makes the process lead unconditionally
// (a single replica, or --once).
type Election = fluxle.Options

// DefaultElection returns the options used when none are given: enabled,
// released on shutdown, fluxcd's default durations.
func DefaultElection() Election {
	return Election{
		Enable:          true,
		ReleaseOnCancel: true,
		LeaseDuration:   35 * time.Second,
		RenewDeadline:   30 * time.Second,
		RetryPeriod:     5 * time.Second,
	}
}

// Candidate is a replica competing for the Lease Name in Namespace.
type Candidate struct {
	Client    kubernetes.Interface
	Namespace string
	Identity  string
	Election  Election
}

// Lead runs leading(ctx) while c holds the Lease c.Namespace/Name and
// returns when ctx ends. When leadership is lost, leading's context is
// cancelled (its cause ErrLost) and, once it has returned, the process
// competes again.
func Lead(ctx context.Context, c Candidate, onChange func(leading bool), leading func(context.Context)) error {
	o := c.Election
	if !o.Enable {
		onChange(true)
		defer onChange(false)
		leading(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: Name},
		Client:     c.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}
	for ctx.Err() == nil {
		if err := leadOnce(ctx, lock, o, leaderWork{onChange: onChange, leading: leading}); err != nil {
			return fmt.Errorf("configuring leader election on lease %s/%s: %w", c.Namespace, Name, err)
		}
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(o.RetryPeriod):
			}
		}
	}
	return nil
}

// leaderWork is what Lead runs for its caller: onChange told when this
// replica starts and stops leading, leading run while it leads.
type leaderWork struct {
	onChange func(leading bool)
	leading  func(context.Context)
}

// leadOnce competes for the lease once. The elector runs on its own context so
// that, on shutdown, the lease is renewed until the leading work has finished
// (a patch in flight, the state write after it) and only then released.
func leadOnce(ctx context.Context, lock resourcelock.Interface, o Election, w leaderWork) error {
	onChange, leading := w.onChange, w.leading
	started := make(chan struct{})
	done := make(chan struct{})
	ectx, ecancel := context.WithCancel(context.WithoutCancel(ctx))
	defer ecancel()
	go func() {
		select {
		case <-ctx.Done():
		case <-ectx.Done():
			return
		}
		select {
		case <-started:
			<-done
		default:
		}
		ecancel()
	}()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: o.ReleaseOnCancel,
		Name:            Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(done)
				close(started)
				// Shutting down (ctx) gives the work its grace; losing the
				// Lease (lctx, while ctx lives) does not.
				wctx, cancel := context.WithCancelCause(context.WithoutCancel(lctx))
				defer cancel(nil)
				lost := context.AfterFunc(lctx, func() { cancel(ErrLost) })
				defer lost()
				stop := context.AfterFunc(ctx, func() { cancel(nil) })
				defer stop()
				onChange(true)
				defer onChange(false)
				leading(wctx)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	le.Run(ectx)
	// Run returns when leadership is lost or ectx ends; the leading work may
	// still be finishing: wait for it before competing again.
	select {
	case <-started:
		<-done
	default:
	}
	return nil
}
