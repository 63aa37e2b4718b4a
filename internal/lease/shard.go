package lease

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// With leaderElection.perEnvironment each environment has its own Lease
// (EnvLeaseName) and each replica announces itself with a member Lease
// (memberLeaseName). One loop per replica (Shard.Run), every retry period:
// renews its member Lease and the environment Leases it holds, lists all of
// them, counts the live replicas, and acquires environments that are free
// or whose holder stopped renewing, up to its fair share
// ceil(environments / live replicas); above that share it gives one back
// (after its worker has finished what was in flight). A Lease is judged
// expired by this replica's own observation, as client-go's leader election
// does: its resourceVersion has not changed for its lease duration, on this
// replica's monotonic clock, so clocks that disagree do not matter.
const (
	envLeasePrefix    = "stagehand-env-"
	memberLeasePrefix = "stagehand-member-"
	componentEnvLease = "env-lease"
	componentMember   = "member"
	annoLeaseEnv      = "stagehand.io/environment"
)

// Deps is what the shard loop uses of the daemon.
type Deps struct {
	Leases   coordclient.LeaseInterface
	Store    *state.Store
	Identity string
	Election Election
	Envs     []string
	// Start runs env's worker under token's term until its context ends;
	// lost is called when a state write is refused (another term claimed
	// it). It returns when the worker has stopped.
	Start func(ctx context.Context, env, token string, lost func())
	// Now stamps the Leases' acquire and renew times (the API server's
	// clock); nothing judges by them: liveness is this replica's
	// monotonic clock. time.Now when nil.
	Now func() time.Time
	// Mono is this replica's monotonic clock, by which a Lease not
	// renewed for its duration is judged expired. time.Now when nil.
	Mono func() time.Time
	// Applying reports whether env's worker is applying a plan now.
	Applying func(env string) bool
	// Leadership is told that this replica began or stopped holding env.
	Leadership func(env string, held bool)
	Logf       func(msg string, kv ...any)
	LogE       func(err error, msg string, kv ...any)
}

// Shard holds environment Leases for one replica.
type Shard struct {
	Deps
	// leases writes the Leases (envlease.go).
	leases leaseWriter
	// seen is, by Lease name, the resourceVersion last seen and when it was
	// first seen (this replica's monotonic clock).
	seen    map[string]observed
	members int
	// deferredTo is the replica without leaderElection.perEnvironment this
	// one stands by for ("" when none leads; see mixed.go).
	deferredTo string

	mu   sync.Mutex
	held map[string]*holding // by environment
	// stopping are workers of environments no longer held that have not
	// finished yet; the environment is not taken again before.
	stopping map[string]chan struct{}
}

type observed struct {
	rv string
	at time.Time
}

// holding is an environment this replica holds.
type holding struct {
	lease   *coordinationv1.Lease
	token   string
	renewed time.Time
	// cancel stops the worker: with ErrLost at once, else after the
	// apply grace (the daemon's worker.graceful).
	cancel context.CancelCauseFunc
	done   chan struct{}
	// giving is set when the environment is being given back: its worker
	// was told to stop; the Lease is released once it has.
	giving bool
}

// NewShard returns the shard loop of one replica; Run runs it.
func NewShard(deps Deps) *Shard {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Mono == nil {
		deps.Mono = time.Now
	}
	if deps.Logf == nil {
		deps.Logf = func(string, ...any) {}
	}
	if deps.LogE == nil {
		deps.LogE = func(error, string, ...any) {}
	}
	if deps.Leadership == nil {
		deps.Leadership = func(string, bool) {}
	}
	return &Shard{Deps: deps, leases: leaseWriter{Deps: deps}, seen: map[string]observed{}, held: map[string]*holding{},
		stopping: map[string]chan struct{}{}}
}

// Held lists the environments this replica holds, in order.
func (s *Shard) Held() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for env, h := range s.held {
		if !h.giving {
			out = append(out, env)
		}
	}
	slices.Sort(out)
	return out
}

// Holds reports whether this replica holds env (and is not giving it back).
func (s *Shard) Holds(env string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[env]
	return ok && !h.giving
}

// Run holds environments until ctx ends; then it stops every worker, waits
// for them, and releases its Leases (with ReleaseOnCancel).
func (s *Shard) Run(ctx context.Context) {
	t := time.NewTicker(s.Election.RetryPeriod)
	defer t.Stop()
	for first := true; ; first = false {
		s.tick(ctx, first)
		select {
		case <-ctx.Done():
			s.shutdown()
			return
		case <-t.C:
		}
	}
}

// tick is one round: renew, look, give back or acquire.
func (s *Shard) tick(ctx context.Context, first bool) {
	if err := s.leases.renewMember(ctx); err != nil {
		s.LogE(err, "renewing this replica's member lease")
	}
	list, err := s.Leases.List(ctx, metav1.ListOptions{LabelSelector: state.LabelManagedBy + "=stagehand," +
		state.LabelComponent + " in (" + componentEnvLease + "," + componentMember + ")"})
	if err != nil {
		if ctx.Err() == nil {
			s.LogE(err, "listing leases")
		}
		s.expireUnrenewed(s.Mono())
		return
	}
	// What the list says is as of now: a request that hung before it
	// must not make it look older than it is.
	now := s.Mono()
	byName := map[string]*coordinationv1.Lease{}
	next := map[string]observed{}
	members := 1
	for i := range list.Items {
		l := &list.Items[i]
		byName[l.Name] = l
		o, ok := s.seen[l.Name]
		if !ok || o.rv != l.ResourceVersion {
			o = observed{rv: l.ResourceVersion, at: now}
		}
		next[l.Name] = o
		if l.Labels[state.LabelComponent] == componentMember && l.Name != memberLeaseName(s.Identity) && s.live(l, o, now) {
			members++
		}
	}
	leader, gerr := s.globalLeader(ctx, next, now)
	s.seen, s.members = next, members
	s.renewHeld(ctx, byName, now)
	s.finishGiving(ctx)
	switch {
	case gerr != nil:
		// Whether a replica leads every environment is not known: keep
		// what is held, take nothing more.
		if ctx.Err() == nil {
			s.LogE(gerr, "taking no environment")
		}
		return
	case leader != "":
		s.standByGlobal(leader)
		return
	case s.deferredTo != "":
		s.Logf("no replica without leaderElection.perEnvironment leads any more: taking environments", "was", s.deferredTo)
		s.deferredTo = ""
	}
	share := (len(s.Envs) + members - 1) / members
	if s.count() > share {
		s.giveBack(share)
		return
	}
	if first {
		return // look once at who is there before taking anything
	}
	s.acquire(ctx, byName, share, now)
}

// live reports whether l, last changed as o says, is held by a replica
// that still renews it.
func (s *Shard) live(l *coordinationv1.Lease, o observed, now time.Time) bool {
	return leaseLive(l, o, now, s.Election.LeaseDuration)
}

func (s *Shard) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.held {
		if !h.giving {
			n++
		}
	}
	return n
}

// renewHeld renews the environment Leases held; one that another replica
// took, or that could not be renewed within the renew deadline, is dropped.
func (s *Shard) renewHeld(ctx context.Context, byName map[string]*coordinationv1.Lease, now time.Time) {
	for _, env := range s.heldEnvs() {
		h := s.holding(env)
		l := byName[EnvName(env)]
		if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != s.Identity ||
			l.Spec.LeaseTransitions == nil || state.FenceToken(*l.Spec.LeaseTransitions, s.Identity) != h.token {
			s.drop(env, "", "another replica holds its lease")
			continue
		}
		rt := metav1.NewMicroTime(s.Now())
		l = l.DeepCopy()
		l.Spec.RenewTime = &rt
		updated, err := s.Leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "stagehand"})
		if err != nil {
			if ctx.Err() == nil {
				s.LogE(err, "renewing environment lease", "environment", env)
			}
			if s.Mono().Sub(h.renewed) > s.Election.RenewDeadline {
				s.drop(env, "", "its lease could not be renewed within the renew deadline")
			}
			continue
		}
		at := s.Mono()
		s.mu.Lock()
		h.lease, h.renewed = updated, at
		s.mu.Unlock()
		s.seen[updated.Name] = observed{rv: updated.ResourceVersion, at: at}
	}
}

// expireUnrenewed drops what has not been renewed within the renew
// deadline (the API server cannot be reached).
func (s *Shard) expireUnrenewed(now time.Time) {
	for _, env := range s.heldEnvs() {
		if now.Sub(s.holding(env).renewed) > s.Election.RenewDeadline {
			s.drop(env, "", "its lease could not be renewed within the renew deadline")
		}
	}
}

func (s *Shard) heldEnvs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for env := range s.held {
		out = append(out, env)
	}
	slices.Sort(out)
	return out
}

func (s *Shard) holding(env string) *holding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[env]
}

// drop stops working env at once, without releasing its Lease (it is not,
// or may not be, this replica's any more); with a token, only if env is
// held in that term.
func (s *Shard) drop(env, token, why string) {
	s.mu.Lock()
	h, ok := s.held[env]
	if ok && token != "" && h.token != token {
		ok = false
	}
	if ok {
		delete(s.held, env)
		s.stopping[env] = h.done
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	h.cancel(ErrLost)
	s.Leadership(env, false)
	s.Logf("not holding environment any more", "environment", env, "why", why, "term", h.token)
}

// giveBack starts giving back an environment held beyond share.
func (s *Shard) giveBack(share int) {
	held := s.Held()
	if len(held) <= share {
		return
	}
	// The last one not applying: an apply is not cut short to even out
	// the share; when all are applying, the next round tries again.
	env := ""
	for i := len(held) - 1; i >= 0 && env == ""; i-- {
		if s.Applying == nil || !s.Applying(held[i]) {
			env = held[i]
		}
	}
	if env == "" {
		return
	}
	s.mu.Lock()
	h := s.held[env]
	h.giving = true
	s.mu.Unlock()
	h.cancel(nil)
	s.Logf("giving an environment back: more than this replica's share", "environment", env, "share", share, "replicas", s.members)
}

// finishGiving releases the Leases of environments given back whose worker
// has stopped.
func (s *Shard) finishGiving(ctx context.Context) {
	for _, env := range s.heldEnvs() {
		h := s.holding(env)
		if !h.giving {
			continue
		}
		select {
		case <-h.done:
		default:
			continue
		}
		s.mu.Lock()
		delete(s.held, env)
		s.mu.Unlock()
		s.Leadership(env, false)
		if err := s.leases.release(ctx, h.lease); err != nil {
			s.LogE(err, "releasing environment lease", "environment", env)
		}
		s.Logf("environment given back", "environment", env, "term", h.token)
	}
}

// acquire takes free environments up to share, starting at a place that
// depends on the identity so that replicas starting together try different
// environments first.
func (s *Shard) acquire(ctx context.Context, byName map[string]*coordinationv1.Lease, share int, now time.Time) {
	sum := sha256.Sum256([]byte(s.Identity))
	off := int(sum[0]) % max(1, len(s.Envs))
	for i := range s.Envs {
		if s.count() >= share {
			return
		}
		env := s.Envs[(off+i)%len(s.Envs)]
		if s.busy(env) {
			continue
		}
		name := EnvName(env)
		l := byName[name]
		if l != nil && s.live(l, s.seen[name], now) && *l.Spec.HolderIdentity != s.Identity {
			continue
		}
		got, err := s.leases.take(ctx, env, l)
		if err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
				s.LogE(err, "acquiring environment lease", "environment", env)
			}
			continue
		}
		s.begin(ctx, env, got)
	}
}

// busy reports whether env is held, or its previous worker still stopping.
func (s *Shard) busy(env string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[env]; ok {
		return true
	}
	if done, ok := s.stopping[env]; ok {
		select {
		case <-done:
			delete(s.stopping, env)
		default:
			return true
		}
	}
	return false
}

// begin claims env's state for the term of Lease l and starts its worker.
func (s *Shard) begin(ctx context.Context, env string, l *coordinationv1.Lease) {
	now := s.Mono()
	token := state.FenceToken(*l.Spec.LeaseTransitions, s.Identity)
	if _, err := s.Store.Claim(ctx, env, token); err != nil {
		s.LogE(err, "claiming environment state; giving the lease back", "environment", env)
		if !errors.Is(err, state.ErrFenced) {
			if rerr := s.leases.release(ctx, l); rerr != nil {
				s.LogE(rerr, "releasing environment lease", "environment", env)
			}
		}
		return
	}
	wctx, cancel := context.WithCancelCause(ctx)
	h := &holding{lease: l, token: token, renewed: now, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.held[env] = h
	s.mu.Unlock()
	s.seen[l.Name] = observed{rv: l.ResourceVersion, at: now}
	s.Leadership(env, true)
	s.Logf("holding environment", "environment", env, "term", token)
	// At once, even while the loop waits on the API server.
	lost := func() { s.drop(env, token, "its state was claimed by another holder") }
	go func() {
		defer close(h.done)
		s.Start(wctx, env, token, lost)
	}()
}

// shutdown stops every worker, waits for them and, with ReleaseOnCancel,
// releases the environment Leases and this replica's member Lease.
func (s *Shard) shutdown() {
	s.mu.Lock()
	held := s.held
	s.held = map[string]*holding{}
	var waits []chan struct{}
	for _, h := range held {
		h.cancel(nil)
		waits = append(waits, h.done)
	}
	for _, done := range s.stopping {
		waits = append(waits, done)
	}
	s.mu.Unlock()
	// The workers finish what is in flight (the apply grace, the state
	// written after it); the Leases are renewed meanwhile, so that no
	// other replica takes an environment whose apply is still running.
	all := make(chan struct{})
	go func() {
		defer close(all)
		for _, done := range waits {
			<-done
		}
	}()
	t := time.NewTicker(s.Election.RetryPeriod)
	defer t.Stop()
	for stopped := false; !stopped; {
		select {
		case <-all:
			stopped = true
		case <-t.C:
			s.leases.renewStopping(held)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for env, h := range held {
		s.Leadership(env, false)
		if !s.Election.ReleaseOnCancel {
			continue
		}
		if err := s.leases.release(ctx, h.lease); err != nil {
			s.LogE(err, "releasing environment lease on shutdown", "environment", env)
		}
	}
	if s.Election.ReleaseOnCancel {
		if err := s.Leases.Delete(ctx, memberLeaseName(s.Identity), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.LogE(err, "removing this replica's member lease")
		}
	}
}
