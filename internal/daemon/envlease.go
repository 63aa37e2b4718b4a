package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// The Leases of leaderElection.perEnvironment (see shard.go): their names,
// and how one is created, taken, renewed and released.

// invalidNameChars are those a Lease's name cannot hold.
var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// EnvLeaseName returns the name of env's Lease with leaderElection.perEnvironment.
func EnvLeaseName(env string) string {
	clean := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(env), "-"), "-")
	if clean == env && len(env) <= 40 {
		return envLeasePrefix + env
	}
	sum := sha256.Sum256([]byte(env))
	if len(clean) > 30 {
		clean = clean[:30]
	}
	return envLeasePrefix + clean + "-" + hex.EncodeToString(sum[:4])
}

func memberLeaseName(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return memberLeasePrefix + hex.EncodeToString(sum[:8])
}

// renewMember keeps this replica's member Lease current.
func (s *shard) renewMember(ctx context.Context) error {
	name := memberLeaseName(s.identity)
	now := metav1.NewMicroTime(s.now())
	l, err := s.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = s.leases.Create(ctx, s.newLease(name, componentMember, "", 0), metav1.CreateOptions{FieldManager: "stagehand"})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime = &s.identity, &now
	l.Spec.LeaseDurationSeconds = s.durationSeconds()
	_, err = s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
	return err
}

func (s *shard) durationSeconds() *int32 {
	d := int32(max(1, s.election.LeaseDuration.Round(time.Second)/time.Second))
	return &d
}

// newLease is a Lease held by this replica from now, in term transitions.
func (s *shard) newLease(name, component, env string, transitions int32) *coordinationv1.Lease {
	now := metav1.NewMicroTime(s.now())
	id := s.identity
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{state.LabelManagedBy: "stagehand", state.LabelComponent: component}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: s.durationSeconds(),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions},
	}
	if env != "" {
		l.Annotations = map[string]string{annoLeaseEnv: env}
	}
	return l
}

// renewStopping renews the Leases of held, whose workers are stopping.
func (s *shard) renewStopping(held map[string]*holding) {
	ctx, cancel := context.WithTimeout(context.Background(), s.election.RenewDeadline)
	defer cancel()
	for env, h := range held {
		select {
		case <-h.done:
			continue
		default:
		}
		l := h.lease.DeepCopy()
		rt := metav1.NewMicroTime(s.now())
		l.Spec.RenewTime = &rt
		updated, err := s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
		if err != nil {
			s.logE(err, "renewing environment lease while its worker stops", "environment", env)
			continue
		}
		h.lease = updated
	}
}

// release gives l up: no holder (the next replica takes it at once).
func (s *shard) release(ctx context.Context, l *coordinationv1.Lease) error {
	if l == nil {
		return nil
	}
	l = l.DeepCopy()
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil, nil
	_, err := s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
	return err
}

// take acquires env's Lease l (nil: create it) in a new term. A Lease that
// is created starts after the last term that claimed the state, so terms
// only grow even when a Lease was deleted.
func (s *shard) take(ctx context.Context, env string, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if l == nil {
		last, err := s.store.FencedTerm(ctx, env)
		if err != nil {
			return nil, err
		}
		return s.leases.Create(ctx, s.newLease(EnvLeaseName(env), componentEnvLease, env, int32(last+1)), metav1.CreateOptions{FieldManager: "stagehand"})
	}
	n := s.newLease(l.Name, componentEnvLease, env, 0)
	l = l.DeepCopy()
	var term int32
	if l.Spec.LeaseTransitions != nil {
		term = *l.Spec.LeaseTransitions + 1
	}
	l.Spec = n.Spec
	l.Spec.LeaseTransitions = &term
	return s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
}

// holderOf returns who holds env's Lease ("" when nobody does).
func holderOf(ctx context.Context, leases coordclient.LeaseInterface, env string) (string, error) {
	l, err := leases.Get(ctx, EnvLeaseName(env), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading lease of environment %q: %w", env, err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}
