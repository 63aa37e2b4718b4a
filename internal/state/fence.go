package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With leaderElection.perEnvironment, an environment's state is written only
// by the holder of its Lease, and a holder is known by its term: the Lease's
// leaseTransitions when it was acquired, and the holder's identity, written
// "<term>/<identity>" into the state ConfigMap's annotation annoFence when
// the term begins (claim). Every write of a fenced Store reads the
// ConfigMap, refuses when the annotation names another term, and writes
// with the resourceVersion it read as precondition: a replica whose term
// is over (it paused, its renewals were lost, another replica took the
// Lease and claimed the state) gets ErrFenced instead of writing over the
// new holder.
const annoFence = "stagehand.io/fence"

// ErrFenced is a state write refused because the environment's state was
// claimed by another holder's term.
var ErrFenced = errors.New("state claimed by another holder")

// fence is the term a Store writes under; lost is called, once, the first
// time a write is refused.
type fence struct {
	token string
	once  sync.Once
	lost  func()
}

// FenceToken is the token of identity's term: leaseTransitions term.
func FenceToken(term int32, identity string) string {
	return strconv.FormatInt(int64(term), 10) + "/" + identity
}

// fenceTerm is the term of a token, -1 when there is none or it is not one.
func fenceTerm(token string) int64 {
	n, _, ok := strings.Cut(token, "/")
	if !ok {
		return -1
	}
	t, err := strconv.ParseInt(n, 10, 32)
	if err != nil {
		return -1
	}
	return t
}

// Fenced returns a Store that writes env states only under token's term
// (see annoFence), sharing s's client and part cache. lost is called, once,
// when a write is refused.
func (s *Store) Fenced(token string, lost func()) *Store {
	c := *s
	c.fence = &fence{token: token, lost: lost}
	return &c
}

// check refuses a write over cm when there is a fence (f is not nil) and
// cm was claimed by another term; a ConfigMap about to be created is
// written under f's term.
func (f *fence) check(cm *corev1.ConfigMap, create bool) error {
	if f == nil {
		return nil
	}
	if create {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[annoFence] = f.token
		return nil
	}
	if got := cm.Annotations[annoFence]; got != f.token {
		if f.lost != nil {
			f.once.Do(f.lost)
		}
		return fmt.Errorf("%w: configmap %s/%s is held by term %q, this replica writes under %q", ErrFenced, cm.Namespace, cm.Name, got, f.token)
	}
	return nil
}

// Claim begins token's term over env's state: the state ConfigMap (created
// when missing) is annotated with token unless it names a later term, in
// which case the claim is ErrFenced. It returns the term the state was
// claimed by before (-1 for none).
func (s *Store) Claim(ctx context.Context, env, token string) (_ int64, err error) {
	defer func() { s.writes.count(env, err) }()
	name := ConfigMapName(env)
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	prev := int64(-1)
	s.seen.put(name, nil) // the next Update reads the state as claimed
	err = retryOnConflict(func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = newStateConfigMap(name, s.namespace, env)
			cm.Annotations[annoFence] = token
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "stagehand"})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		// A state of a schema this build must not read is not claimed
		// either: claiming writes to it.
		if _, err := readSchema(cm, s.schema); err != nil {
			return err
		}
		cur := cm.Annotations[annoFence]
		prev = fenceTerm(cur)
		if prev > fenceTerm(token) {
			return fmt.Errorf("%w: configmap %s/%s is held by term %q, later than %q", ErrFenced, s.namespace, name, cur, token)
		}
		if cur == token {
			return nil
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[annoFence] = token
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "stagehand"})
		return err
	})
	if err != nil {
		return prev, fmt.Errorf("claiming state of environment %q for term %q: %w", env, token, err)
	}
	return prev, nil
}

// FencedTerm returns the term env's state was last claimed by (-1 for none).
func (s *Store) FencedTerm(ctx context.Context, env string) (int64, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, ConfigMapName(env), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("reading state of environment %q: %w", env, err)
	}
	return fenceTerm(cm.Annotations[annoFence]), nil
}

// Holds reports whether s may still write env's state: nil for a Store that
// is not fenced, or when env's state ConfigMap names s's term; ErrFenced
// (and lost called) when it names another. Writers of what the holder alone
// writes beside the state (the Environment resource's status) ask it first.
func (s *Store) Holds(ctx context.Context, env string) error {
	if s.fence == nil {
		return nil
	}
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, ConfigMapName(env), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading state of environment %q: %w", env, err)
	}
	return s.fence.check(cm, false)
}

// Term is the token s writes under ("" when s is not fenced).
func (s *Store) Term() string {
	if s.fence == nil {
		return ""
	}
	return s.fence.token
}
