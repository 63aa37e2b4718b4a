package lease

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

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// The Leases of leaderElection.perEnvironment (see shard.go): their names,
// and how one is created, taken, renewed and released.

// invalidNameChars are those a Lease's name cannot hold.
var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// EnvName returns the name of env's Lease with leaderElection.perEnvironment.
func EnvName(env string) string {
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

// leaseWriter writes this replica's Leases through Deps.Leases, stamped
// with Deps.Now: its member Lease, and the environment Leases it takes,
// renews while their workers stop, and releases.
type leaseWriter struct {
	Deps
}

// renewMember keeps this replica's member Lease current.
func (s leaseWriter) renewMember(ctx context.Context) error {
	name := memberLeaseName(s.Identity)
	now := metav1.NewMicroTime(s.Now())
	l, err := s.Leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = s.Leases.Create(ctx, s.newLease(name, componentMember, "", 0), metav1.CreateOptions{FieldManager: "stagehand"})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime = &s.Identity, &now
	l.Spec.LeaseDurationSeconds = s.durationSeconds()
	_, err = s.Leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
	return err
}

func (s leaseWriter) durationSeconds() *int32 {
	d := int32(max(1, s.Election.LeaseDuration.Round(time.Second)/time.Second))
	return &d
}

// newLease is a Lease held by this replica from now, in term transitions.
func (s leaseWriter) newLease(name, component, env string, transitions int32) *coordinationv1.Lease {
	now := metav1.NewMicroTime(s.Now())
	id := s.Identity
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
func (s leaseWriter) renewStopping(held map[string]*holding) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Election.RenewDeadline)
	defer cancel()
	for env, h := range held {
		select {
		case <-h.done:
			continue
		default:
		}
		l := h.lease.DeepCopy()
		rt := metav1.NewMicroTime(s.Now())
		l.Spec.RenewTime = &rt
		updated, err := s.Leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
		if err != nil {
			s.LogE(err, "renewing environment lease while its worker stops", "environment", env)
			continue
		}
		h.lease = updated
	}
}

// release gives l up: no holder (the next replica takes it at once).
func (s leaseWriter) release(ctx context.Context, l *coordinationv1.Lease) error {
	if l == nil {
		return nil
	}
	l = l.DeepCopy()
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil, nil
	_, err := s.Leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
	return err
}

// take acquires env's Lease l (nil: create it) in a new term. A Lease that
// is created starts after the last term that claimed the state, so terms
// only grow even when a Lease was deleted.
func (s leaseWriter) take(ctx context.Context, env string, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if l == nil {
		last, err := s.Store.FencedTerm(ctx, env)
		if err != nil {
			return nil, err
		}
		return s.Leases.Create(ctx, s.newLease(EnvName(env), componentEnvLease, env, int32(last+1)), metav1.CreateOptions{FieldManager: "stagehand"})
	}
	n := s.newLease(l.Name, componentEnvLease, env, 0)
	l = l.DeepCopy()
	var term int32
	if l.Spec.LeaseTransitions != nil {
		term = *l.Spec.LeaseTransitions + 1
	}
	l.Spec = n.Spec
	l.Spec.LeaseTransitions = &term
	return s.Leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
}

// HolderOf returns who holds env's Lease ("" when nobody does).
func (s *Shard) HolderOf(ctx context.Context, env string) (string, error) {
	l, err := s.Leases.Get(ctx, EnvName(env), metav1.GetOptions{})
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
