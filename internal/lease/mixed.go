package lease

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// Replicas started with different leaderElection.perEnvironment settings
// (a rolling change of the setting, or a mistake) never work the same
// environment at once: a replica without it, once it holds the Lease
// Name (the one Lease of a single leader), leads every environment, and
// replicas with it stand by:
//
//   - a replica with perEnvironment that sees Name held and renewed
//     gives back every environment it holds (each after its worker has
//     finished what was in flight, its Lease released) and takes none
//     (shard.tick, standByGlobal);
//   - a replica without it that was elected waits, before it works, until
//     no environment Lease is held and renewed by a replica with it
//     (waitEnvLeases): the time those take to give back, or the lease
//     duration for one that was killed.
//
// Each logs, once, why it stands by.

// WaitEnvLeases returns nil once no environment Lease in leases is held by a
// replica that still renews it (judged, as Shard does, on this replica's
// monotonic clock), or ctx's error when ctx ends first. logE is told, once
// per change, who it waits for.
func WaitEnvLeases(ctx context.Context, leases coordclient.LeaseInterface, election Election, logE func(err error, msg string, kv ...any)) error {
	sel := state.LabelManagedBy + "=stagehand," + state.LabelComponent + "=" + componentEnvLease
	seen := map[string]observed{}
	said := ""
	for {
		list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: sel})
		switch {
		case apierrors.IsForbidden(err):
			// Without the right to list Leases no replica can hold
			// environments (the shard loop lists them): none to wait for.
			logE(err, "not allowed to list leases: not waiting for replicas with leaderElection.perEnvironment")
			return nil
		case err != nil && ctx.Err() == nil:
			logE(err, "listing environment leases before leading; retrying")
		case err == nil:
			now := time.Now()
			next := map[string]observed{}
			var live []string
			for i := range list.Items {
				l := &list.Items[i]
				o, ok := seen[l.Name]
				if !ok || o.rv != l.ResourceVersion {
					o = observed{rv: l.ResourceVersion, at: now}
				}
				next[l.Name] = o
				if leaseLive(l, o, now, election.LeaseDuration) {
					live = append(live, fmt.Sprintf("%s (held by %s)", l.Annotations[annoLeaseEnv], *l.Spec.HolderIdentity))
				}
			}
			seen = next
			if len(live) == 0 {
				return nil
			}
			slices.Sort(live)
			if s := fmt.Sprint(live); s != said {
				said = s
				logE(nil, "elected, but replicas with leaderElection.perEnvironment hold environments: "+
					"waiting until they give them back (every replica should have the same leaderElection.perEnvironment)",
					"environments", live)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(election.RetryPeriod):
		}
	}
}

// leaseLive reports whether l, last changed as o says, is held by a replica
// that still renews it: it has a holder and its resourceVersion changed
// within its lease duration (def when it names none).
func leaseLive(l *coordinationv1.Lease, o observed, now time.Time, def time.Duration) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return false
	}
	d := def
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Sub(o.at) < d
}

// globalLeader returns who holds the Lease Name and renews it (a
// replica without leaderElection.perEnvironment leads), "" when nobody does,
// recording what it saw into next.
func (s *Shard) globalLeader(ctx context.Context, next map[string]observed, now time.Time) (string, error) {
	l, err := s.Leases.Get(ctx, Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading lease %s: %w", Name, err)
	}
	o, ok := s.seen[l.Name]
	if !ok || o.rv != l.ResourceVersion {
		o = observed{rv: l.ResourceVersion, at: now}
	}
	next[l.Name] = o
	if !leaseLive(l, o, now, s.Election.LeaseDuration) {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// standByGlobal gives back every environment held, because leader is a
// replica without leaderElection.perEnvironment that leads them all; it
// logs that once per leader.
func (s *Shard) standByGlobal(leader string) {
	s.mu.Lock()
	var gave []string
	for env, h := range s.held {
		if !h.giving {
			h.giving = true
			h.cancel(nil)
			gave = append(gave, env)
		}
	}
	s.mu.Unlock()
	slices.Sort(gave)
	if leader != s.deferredTo {
		s.deferredTo = leader
		s.LogE(nil, "standing by: a replica without leaderElection.perEnvironment leads every environment "+
			"(every replica should have the same leaderElection.perEnvironment)", "leader", leader, "givingBack", gave)
	}
}
