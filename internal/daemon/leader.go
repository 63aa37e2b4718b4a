package daemon

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

// LeaseName is the Lease the replicas compete for in the state namespace.
const LeaseName = "stagehand-reconciler"

// errLeaseLost is the cause of a leader's (or an environment holder's) work
// context when its Lease was lost, not when it shuts down: the apply under
// way stops before its next patch instead of being given the apply grace.
var errLeaseLost = errors.New("this replica lost its lease")

// LeaderElection configures leader election; its fields are fluxcd's runtime
// options (and flags). Enable false makes the process lead unconditionally
// (a single replica, or --once).
type LeaderElection = fluxle.Options

// DefaultLeaderElection returns the options used when none are given: enabled,
// released on shutdown, fluxcd's default durations.
func DefaultLeaderElection() LeaderElection {
	return LeaderElection{
		Enable:          true,
		ReleaseOnCancel: true,
		LeaseDuration:   35 * time.Second,
		RenewDeadline:   30 * time.Second,
		RetryPeriod:     5 * time.Second,
	}
}

// lead runs leading(ctx) while this process holds the Lease namespace/LeaseName
// and returns when ctx ends. When leadership is lost, leading's context is
// cancelled and, once it has returned, the process competes again.
func lead(ctx context.Context, client kubernetes.Interface, namespace, identity string, o LeaderElection,
	onChange func(leading bool), leading func(context.Context)) error {
	if !o.Enable {
		onChange(true)
		defer onChange(false)
		leading(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	for ctx.Err() == nil {
		if err := leadOnce(ctx, lock, o, onChange, leading); err != nil {
			return fmt.Errorf("configuring leader election on lease %s/%s: %w", namespace, LeaseName, err)
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

// leadOnce competes for the lease once. The elector runs on its own context so
// that, on shutdown, the lease is renewed until the leading work has finished
// (a patch in flight, the state write after it) and only then released.
func leadOnce(ctx context.Context, lock resourcelock.Interface, o LeaderElection,
	onChange func(leading bool), leading func(context.Context)) error {
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
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(done)
				close(started)
				// Shutting down (ctx) gives the work its grace; losing the
				// Lease (lctx, while ctx lives) does not.
				wctx, cancel := context.WithCancelCause(context.WithoutCancel(lctx))
				defer cancel(nil)
				lost := context.AfterFunc(lctx, func() { cancel(errLeaseLost) })
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
