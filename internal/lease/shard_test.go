package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// TestGiveBackSparesAnApply: a replica above its share gives back the last
// environment it holds that is not applying, and none while all are.
func TestGiveBackSparesAnApply(t *testing.T) {
	applying := map[string]bool{"us": true}
	s := NewShard(Deps{Envs: []string{"devel", "prod", "us"},
		Applying: func(env string) bool { return applying[env] }})
	cancelled := map[string]bool{}
	for _, env := range s.Envs {
		s.held[env] = &holding{cancel: func(error) { cancelled[env] = true }, done: make(chan struct{})}
	}
	s.giveBack(2)
	if diff := cmp.Diff([]string{"devel", "us"}, s.Held()); diff != "" || !cancelled["prod"] || cancelled["us"] {
		t.Errorf("after giving one back: held (-want +got):\n%s; cancelled %v, want prod only", diff, cancelled)
	}
	applying["devel"] = true
	s.giveBack(1)
	if diff := cmp.Diff([]string{"devel", "us"}, s.Held()); diff != "" || len(cancelled) != 1 {
		t.Errorf("with every environment applying: held (-want +got):\n%s; cancelled %v", diff, cancelled)
	}
}

// TestShardCancelCauses: an environment dropped (its Lease lost, its state
// claimed by another term) stops its worker with ErrLost; one given
// back stops it gracefully.
func TestShardCancelCauses(t *testing.T) {
	s := NewShard(Deps{Envs: []string{"devel", "prod"}})
	ctxs := map[string]context.Context{}
	for _, env := range s.Envs {
		ctx, cancel := context.WithCancelCause(context.Background())
		ctxs[env] = ctx
		s.held[env] = &holding{token: "1/me", cancel: cancel, done: make(chan struct{})}
	}
	s.drop("devel", "1/me", "its state was claimed by another holder")
	s.giveBack(0)
	if got := context.Cause(ctxs["devel"]); !errors.Is(got, ErrLost) {
		t.Errorf("devel dropped: cause %v, want ErrLost", got)
	}
	if got := context.Cause(ctxs["prod"]); !errors.Is(got, context.Canceled) {
		t.Errorf("prod given back: cause %v, want context.Canceled (graceful)", got)
	}
}

// world is one replica's shard loop over client-go's fake clientset (Leases
// and the state's ConfigMaps), on a fake monotonic clock, ticked by hand.
type world struct {
	t      *testing.T
	client *fake.Clientset
	s      *Shard
	mono   time.Time
	mu     sync.Mutex
	// started are the terms each environment's worker was started in.
	started map[string][]string
	// causes are the causes its workers were stopped with.
	causes map[string][]error
}

var testElection = Election{Enable: true, ReleaseOnCancel: true, LeaseDuration: 10 * time.Second,
	RenewDeadline: 8 * time.Second, RetryPeriod: time.Second}

func newWorld(t *testing.T, identity string, envs ...string) *world {
	w := &world{t: t, client: fake.NewClientset(), mono: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC),
		started: map[string][]string{}, causes: map[string][]error{}}
	w.s = NewShard(Deps{Leases: w.client.CoordinationV1().Leases("stagehand"), Store: state.NewStore(w.client, "stagehand"),
		Identity: identity, Election: testElection, Envs: envs,
		Mono: func() time.Time { return w.mono },
		Start: func(ctx context.Context, env, token string, _ func()) {
			w.mu.Lock()
			w.started[env] = append(w.started[env], token)
			w.mu.Unlock()
			<-ctx.Done()
			w.mu.Lock()
			w.causes[env] = append(w.causes[env], context.Cause(ctx))
			w.mu.Unlock()
		}})
	t.Cleanup(w.s.shutdown)
	return w
}

// tick runs one round of the loop after d on the monotonic clock.
func (w *world) tick(d time.Duration, first bool) {
	w.mono = w.mono.Add(d)
	w.s.tick(context.Background(), first)
}

func (w *world) lease(env string) *coordinationv1.Lease {
	w.t.Helper()
	l, err := w.client.CoordinationV1().Leases("stagehand").Get(context.Background(), EnvName(env), metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return l
}

// other puts env's Lease in another replica's hands, in term transitions, at
// resourceVersion rv (the fake clientset keeps what it is given).
func (w *world) other(env, holder string, transitions int32, rv string) {
	w.t.Helper()
	leases := w.client.CoordinationV1().Leases("stagehand")
	l, err := leases.Get(context.Background(), EnvName(env), metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		w.t.Fatal(err)
	}
	if create {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: EnvName(env), Namespace: "stagehand",
			Labels: map[string]string{state.LabelManagedBy: "stagehand", state.LabelComponent: componentEnvLease}}}
	}
	secs := int32(testElection.LeaseDuration / time.Second)
	l.ResourceVersion = rv
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseTransitions: &transitions, LeaseDurationSeconds: &secs}
	if create {
		_, err = leases.Create(context.Background(), l, metav1.CreateOptions{})
	} else {
		_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// waitStarted waits for env's worker to have been started n times.
func (w *world) waitStarted(env string, n int) []string {
	w.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		got := append([]string(nil), w.started[env]...)
		w.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s's worker started %d times, want %d", env, len(got), n)
		}
	}
}

// TestShardTakesFreeEnvironments: a replica looks once before taking
// anything, then takes every free environment (alone, its share is all) in
// a term after the last that claimed each state, claims the state for it and
// starts the worker under that term.
func TestShardTakesFreeEnvironments(t *testing.T) {
	w := newWorld(t, "replica-a", "devel", "prod")
	// prod's state was claimed in term 6 by a Lease since deleted (by hand).
	if _, err := w.s.Store.Claim(context.Background(), "prod", state.FenceToken(6, "replica-z")); err != nil {
		t.Fatal(err)
	}
	w.tick(0, true)
	if got := w.s.Held(); len(got) != 0 {
		t.Fatalf("held after the first look: %v, want nothing", got)
	}
	w.tick(time.Second, false)
	if diff := cmp.Diff([]string{"devel", "prod"}, w.s.Held()); diff != "" {
		t.Fatalf("held (-want +got):\n%s", diff)
	}
	for env, term := range map[string]int32{"devel": 0, "prod": 7} {
		l := w.lease(env)
		if *l.Spec.HolderIdentity != "replica-a" || *l.Spec.LeaseTransitions != term || l.Annotations[annoLeaseEnv] != env {
			t.Errorf("%s's lease: holder %s, transitions %d, annotations %v; want replica-a in term %d", env, *l.Spec.HolderIdentity, *l.Spec.LeaseTransitions, l.Annotations, term)
		}
		want := state.FenceToken(term, "replica-a")
		if diff := cmp.Diff([]string{want}, w.waitStarted(env, 1)); diff != "" {
			t.Errorf("%s's worker terms (-want +got):\n%s", env, diff)
		}
		if got, err := w.s.Store.FencedTerm(context.Background(), env); err != nil || got != int64(term) {
			t.Errorf("%s's state claimed by term %d, %v; want %d", env, got, err, term)
		}
	}
	if got, err := w.s.HolderOf(context.Background(), "prod"); err != nil || got != "replica-a" {
		t.Errorf("HolderOf(prod) = %q, %v", got, err)
	}
}

// TestShardTakesOverOnlyAfterLeaseDuration: another replica's Lease is taken
// once its resourceVersion has not changed for the lease duration on this
// replica's monotonic clock, not before, and a renewal seen starts the
// duration again; the new term is the one after the holder's.
func TestShardTakesOverOnlyAfterLeaseDuration(t *testing.T) {
	w := newWorld(t, "replica-a", "prod")
	w.other("prod", "replica-b", 4, "1")
	w.tick(0, true) // first seen now
	for _, step := range []struct {
		after time.Duration
		renew string // the holder renews before the tick (a new resourceVersion)
		taken bool
	}{
		{after: 9 * time.Second},
		{after: 500 * time.Millisecond, renew: "2"}, // seen renewed 9.5 s in
		{after: 9 * time.Second},                    // 9 s after the renewal was seen
		{after: 2 * time.Second, taken: true},       // 11 s after
	} {
		if step.renew != "" {
			w.other("prod", "replica-b", 4, step.renew)
		}
		w.tick(step.after, false)
		if got := w.s.Holds("prod"); got != step.taken {
			t.Fatalf("after %v more (renewed %q): holds prod %v, want %v", step.after, step.renew, got, step.taken)
		}
	}
	if l := w.lease("prod"); *l.Spec.HolderIdentity != "replica-a" || *l.Spec.LeaseTransitions != 5 {
		t.Errorf("prod's lease: holder %s in term %d, want replica-a in term 5", *l.Spec.HolderIdentity, *l.Spec.LeaseTransitions)
	}
	if diff := cmp.Diff([]string{state.FenceToken(5, "replica-a")}, w.waitStarted("prod", 1)); diff != "" {
		t.Errorf("worker terms (-want +got):\n%s", diff)
	}
}

// TestShardDropsLeaseTakenByAnother: a Lease another replica took (a new
// term) is dropped at the next round, its worker stopped with ErrLost at
// once, and not taken back while the other renews it.
func TestShardDropsLeaseTakenByAnother(t *testing.T) {
	w := newWorld(t, "replica-a", "prod")
	w.tick(0, true)
	w.tick(time.Second, false)
	w.waitStarted("prod", 1)
	w.other("prod", "replica-b", 1, "b1")
	w.tick(time.Second, false)
	if w.s.Holds("prod") {
		t.Fatal("still holding prod after replica-b took its lease")
	}
	<-w.s.stopping["prod"]
	w.mu.Lock()
	causes := w.causes["prod"]
	w.mu.Unlock()
	if len(causes) != 1 || !errors.Is(causes[0], ErrLost) {
		t.Errorf("worker stopped with %v, want ErrLost", causes)
	}
	w.tick(time.Second, false)
	if w.s.Holds("prod") || *w.lease("prod").Spec.HolderIdentity != "replica-b" {
		t.Error("prod taken back from a live holder")
	}
}

// TestShardGivesBackAboveShare: with a second live replica the share halves;
// the replica gives one environment back, gracefully, and releases its
// Lease only once the worker has stopped.
func TestShardGivesBackAboveShare(t *testing.T) {
	w := newWorld(t, "replica-a", "devel", "prod")
	w.tick(0, true)
	w.tick(time.Second, false)
	w.waitStarted("devel", 1)
	w.waitStarted("prod", 1)
	// replica-b announces itself.
	b := "replica-b"
	secs := int32(10)
	if _, err := w.client.CoordinationV1().Leases("stagehand").Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: memberLeaseName(b), ResourceVersion: "1",
			Labels: map[string]string{state.LabelManagedBy: "stagehand", state.LabelComponent: componentMember}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &b, LeaseDurationSeconds: &secs}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.tick(time.Second, false)
	held := w.s.Held()
	if len(held) != 1 {
		t.Fatalf("held %v after a second replica came, want one environment", held)
	}
	gone := map[string]bool{"devel": true, "prod": true}
	delete(gone, held[0])
	var given string
	for env := range gone {
		given = env
	}
	<-w.s.holding(given).done
	w.mu.Lock()
	causes := w.causes[given]
	w.mu.Unlock()
	if len(causes) != 1 || errors.Is(causes[0], ErrLost) {
		t.Errorf("%s given back: worker stopped with %v, want a graceful stop", given, causes)
	}
	w.tick(time.Second, false)
	if l := w.lease(given); l.Spec.HolderIdentity != nil {
		t.Errorf("%s's lease still held by %s after its worker stopped", given, *l.Spec.HolderIdentity)
	}
}
