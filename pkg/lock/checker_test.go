package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckerBlocking(t *testing.T) {
	ctx := context.Background()
	c := newFakeClock()
	s := newMemoryService(t, c)
	l := newLock(c, "apps/production", Incident, 90*time.Minute)
	l.Env = Env{Cluster: "testing", Account: "staging"}
	if _, err := s.Lock(ctx, l); err != nil {
		t.Fatal(err)
	}
	ch := newChecker(t, s, time.UTC)
	got, err := ch.Blocking(ctx, "apps/production/a/auth-app", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apps/production is locked until Sat 31 Dec, 12:00 by an incident in testing/staging."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Blocking (-want +got):\n%s", diff)
	}
	if got, err := ch.Blocking(ctx, "apps/staging/a/auth-app", "deploy"); err != nil || len(got) != 0 {
		t.Errorf("Blocking elsewhere = %v, %v", got, err)
	}
	if _, err := ch.Blocking(ctx, "apps/production", "outage"); err == nil {
		t.Error("Blocking accepted an unknown type")
	}
	c.Advance(90 * time.Minute)
	if got, err := ch.Blocking(ctx, "apps/production/a/auth-app", "deploy"); err != nil || len(got) != 0 {
		t.Errorf("Blocking after expiry = %v, %v", got, err)
	}
}

func TestCheckerHoldMemory(t *testing.T) { testCheckerHold(t, newMemoryService) }

func TestCheckerHoldKubernetes(t *testing.T) { testCheckerHold(t, newKubeService) }

func testCheckerHold(t *testing.T, newService func(*testing.T, *fakeClock) *Service) {
	ctx := context.Background()
	c := newFakeClock()
	s := newService(t, c)
	ch := newChecker(t, s, time.UTC)
	release, err := ch.Hold(ctx, "apps/staging/a", 30*time.Millisecond, "reconciler")
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.Get(ctx, "apps/staging/a")
	if err != nil || held.Type != Deploy || held.Author != "reconciler" || !held.ExpiresAt.Equal(c.Now().Add(time.Second)) {
		t.Fatalf("held lock %+v, %v", held, err)
	}
	// Our own deploy lock does not block us, but blocks a second deploy.
	if got, err := ch.Blocking(ctx, "apps/staging/a/chat-app", "deploy"); err != nil || len(got) != 0 {
		t.Errorf("own lock blocks: %v, %v", got, err)
	}
	other := newChecker(t, s, time.UTC)
	if got, _ := other.Blocking(ctx, "apps/staging/a/chat-app", "deploy"); len(got) != 1 {
		t.Errorf("another checker sees %v, want the deploy lock", got)
	}
	var le *LockedError
	if _, err := other.Hold(ctx, "apps/staging/a", time.Minute, "other"); !errors.As(err, &le) ||
		!strings.Contains(err.Error(), "apps/staging/a is locked until") {
		t.Errorf("second Hold: error = %v, want *LockedError", err)
	}
	// The holder refreshes the lock: wait for the version to change.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.Advance(time.Second)
		cur, err := s.Get(ctx, "apps/staging/a")
		if err == nil && cur.Version != held.Version && cur.ExpiresAt.After(held.ExpiresAt) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock never refreshed: %+v, %v", cur, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Holding again extends the same lock and shares its release.
	before, _ := s.Get(ctx, "apps/staging/a")
	c.Advance(time.Second)
	again, err := ch.Hold(ctx, "Apps/Staging/A", time.Hour, "reconciler")
	if err != nil {
		t.Fatalf("second Hold by the holder: %v", err)
	}
	after, _ := s.Get(ctx, "apps/staging/a")
	if after.ID != before.ID || !after.ExpiresAt.Equal(c.Now().Add(time.Hour)) {
		t.Errorf("re-Hold: before %+v, after %+v", before, after)
	}
	// A lock taken above mid-apply blocks us.
	if _, err := s.Lock(ctx, newLock(c, "apps/staging", Incident, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := ch.Blocking(ctx, "apps/staging/a/chat-app", "deploy"); len(got) != 1 || !strings.HasPrefix(got[0], "apps/staging is locked") {
		t.Errorf("mid-apply incident: Blocking = %v", got)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again(ctx); err != nil {
		t.Errorf("second release: %v", err)
	}
	if _, err := s.Get(ctx, "apps/staging/a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after release: error = %v, want ErrNotFound", err)
	}
	if _, err := ch.Hold(ctx, "apps/staging/b", time.Minute, "reconciler"); !errors.As(err, &le) {
		t.Errorf("Hold under an incident: error = %v, want *LockedError", err)
	}
}

// lockLister is pkg/reconcile's optional LockLister (not imported: the
// reconciler's tests import this package).
type lockLister interface {
	BlockingWithin(ctx context.Context, prefix, lockType string) (map[string][]string, error)
	BlockingWithinCached(ctx context.Context, prefix, lockType string) (map[string][]string, error)
}

var _ lockLister = (*Checker)(nil)

func TestCheckerBlockingWithinMemory(t *testing.T) { testCheckerBlockingWithin(t, newMemoryService) }

func TestCheckerBlockingWithinKubernetes(t *testing.T) {
	testCheckerBlockingWithin(t, newKubeService)
}

// testCheckerBlockingWithin: the subtree answer holds the locks above, at and
// beneath the prefix that block the type, not expired ones, not ones that
// allow it, not other subtrees, not the Checker's own; and for each path
// beneath the prefix it agrees with Blocking.
func testCheckerBlockingWithin(t *testing.T, newService func(*testing.T, *fakeClock) *Service) {
	ctx := context.Background()
	c := newFakeClock()
	s := newService(t, c)
	take := func(path string, typ Type, d time.Duration, allow ...Type) {
		t.Helper()
		l := newLock(c, path, typ, d)
		l.Allow = allow
		if _, err := s.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	take("apps/staging/a/expired", Automation, time.Minute)
	c.Advance(2 * time.Minute)
	take("apps/staging/a/chat-app", Deploy, time.Hour)
	take("apps/staging/b", Incident, time.Hour, Deploy)
	take("apps/production", Incident, time.Hour)
	ch := newChecker(t, s, time.UTC)
	release, err := ch.Hold(ctx, "apps/staging/c", time.Hour, "reconciler")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = release(ctx) }()
	take("apps", Freeze, time.Hour) // last: a parent lock does not check beneath it

	got, err := ch.BlockingWithin(ctx, "apps/staging", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"apps":                    {"apps is locked until Sat 31 Dec, 11:32 by a release freeze in apps."},
		"apps/staging/a/chat-app": {"apps/staging/a/chat-app is locked until Sat 31 Dec, 11:32 by a deploy in apps/staging."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BlockingWithin (-want +got):\n%s", diff)
	}
	// The cached read (the watch cache, for Kubernetes) gives the same answer
	// once the cache holds the last write, within moments.
	var cached map[string][]string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cached, err = ch.BlockingWithinCached(ctx, "apps/staging", "deploy"); err == nil && cmp.Equal(want, cached) {
			break
		}
	}
	if diff := cmp.Diff(want, cached); diff != "" {
		t.Errorf("BlockingWithinCached (-want +got), err %v:\n%s", err, diff)
	}
	for _, p := range []string{"apps/staging/a/chat-app", "apps/staging/b/x", "apps/staging/c/x"} {
		single, err := ch.Blocking(ctx, p, "deploy")
		if err != nil {
			t.Fatal(err)
		}
		var fromTree []string
		for _, k := range []string{"apps", "apps/staging/a/chat-app"} {
			if p == k || strings.HasPrefix(p, k+"/") {
				fromTree = append(fromTree, got[k]...)
			}
		}
		if diff := cmp.Diff(single, fromTree); diff != "" {
			t.Errorf("%s: Blocking and BlockingWithin disagree (-Blocking +BlockingWithin):\n%s", p, diff)
		}
	}
	if _, err := ch.BlockingWithin(ctx, "apps//x", "deploy"); err == nil {
		t.Error("BlockingWithin accepted an invalid path")
	}
	if _, err := ch.BlockingWithin(ctx, "apps", "outage"); err == nil {
		t.Error("BlockingWithin accepted an unknown type")
	}
}

func TestCheckerTakesOverItsOwnDeployLockMemory(t *testing.T) {
	testCheckerTakeOver(t, newMemoryService)
}

func TestCheckerTakesOverItsOwnDeployLockKubernetes(t *testing.T) {
	testCheckerTakeOver(t, newKubeService)
}

// testCheckerTakeOver: a replica killed mid-apply leaves its deploy lock; the
// next leader (same author, TakeOverOwnLocks) goes on at once, while a
// human's lock, another type, a lock above, or a Checker without the option
// still refuses.
func testCheckerTakeOver(t *testing.T, newService func(*testing.T, *fakeClock) *Service) {
	ctx := context.Background()
	c := newFakeClock()
	s := newService(t, c)
	const author = "stagehand-reconciler"
	dead := newChecker(t, s, time.UTC, TakeOverOwnLocks(author))
	deadCtx, kill := context.WithCancel(ctx)
	if _, err := dead.Hold(deadCtx, "apps/prod/a", time.Hour, author); err != nil {
		t.Fatal(err)
	}
	kill() // SIGKILL: no release, the lock stays for an hour
	stale, err := s.Get(ctx, "apps/prod/a")
	if err != nil {
		t.Fatal(err)
	}

	var le *LockedError
	if _, err := newChecker(t, s, time.UTC).Hold(ctx, "apps/prod/a", time.Minute, author); !errors.As(err, &le) {
		t.Errorf("Hold without TakeOverOwnLocks: error = %v, want *LockedError", err)
	}
	next := newChecker(t, s, time.UTC, TakeOverOwnLocks(author))
	if msgs, _ := next.Blocking(ctx, "apps/prod/a/web", "deploy"); len(msgs) != 0 {
		t.Errorf("the dead holder's lock blocks the next one's plan: %v", msgs)
	}
	if msgs, _ := newChecker(t, s, time.UTC).Blocking(ctx, "apps/prod/a/web", "deploy"); len(msgs) != 1 {
		t.Errorf("another Checker sees %v, want the deploy lock", msgs)
	}
	if _, err := next.Hold(ctx, "apps/prod/a", time.Minute, "someone-else"); !errors.As(err, &le) {
		t.Errorf("Hold by another author: error = %v, want *LockedError", err)
	}
	c.Advance(time.Second)
	release, err := next.Hold(ctx, "apps/prod/a", time.Minute, author)
	if err != nil {
		t.Fatalf("next leader's Hold: %v", err)
	}
	got, err := s.Get(ctx, "apps/prod/a")
	if err != nil || got.ID != stale.ID || got.Author != author || !got.ExpiresAt.Equal(c.Now().Add(time.Minute)) {
		t.Errorf("taken-over lock %+v, %v; want the stale one (ID %s) expiring in a minute", got, err, stale.ID)
	}
	if msgs, _ := next.Blocking(ctx, "apps/prod/a/web", "deploy"); len(msgs) != 0 {
		t.Errorf("the taken-over lock blocks its new holder: %v", msgs)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "apps/prod/a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after release: error = %v, want ErrNotFound", err)
	}

	// Other locks still block the reconciler.
	for _, l := range []Lock{
		{Path: "apps/prod/b", Type: Deploy, Author: "alice"},
		{Path: "apps/prod/c", Type: Incident, Author: author},
		{Path: "apps/prod", Type: Deploy, Author: author},
	} {
		l.ExpiresAt = c.Now().Add(time.Hour)
		if _, err := s.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
		path := l.Path
		if path == "apps/prod" {
			path = "apps/prod/d"
		}
		if l.Author == author && l.Type == Deploy {
			// Ours, but on a prefix: plans ignore it, Hold does not take it over.
			if _, err := next.Hold(ctx, path, time.Minute, author); !errors.As(err, &le) {
				t.Errorf("Hold %s under our lock on %s: error = %v, want *LockedError", path, l.Path, err)
			}
			continue
		}
		if msgs, _ := next.Blocking(ctx, path+"/web", "deploy"); len(msgs) != 1 {
			t.Errorf("Blocking %s/web under %s lock of %s = %v, want it", path, l.Type, l.Author, msgs)
		}
		if _, err := next.Hold(ctx, path, time.Minute, author); !errors.As(err, &le) {
			t.Errorf("Hold %s under %s lock of %s: error = %v, want *LockedError", path, l.Type, l.Author, err)
		}
	}
}

func newChecker(t *testing.T, s *Service, loc *time.Location, opts ...Option) *Checker {
	t.Helper()
	c, err := NewChecker(s, loc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
