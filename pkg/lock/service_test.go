package lock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/lock/locktest"
)

// fakeClock is a settable clock for expiry tests.
// fakeClock is locktest's settable clock.
type fakeClock = locktest.Clock

func newFakeClock() *fakeClock { return locktest.NewClock() }

// newLock returns a lock like the CLI builds it, expiring after d.
func newLock(c *fakeClock, path string, typ Type, d time.Duration) Lock {
	l := Lock{Path: path, Type: typ, Author: "tester", ExpiresAt: c.Now().Add(d)}
	l.Default(nil)
	return l
}

func paths(ls []Lock) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.Path)
	}
	return out
}

func TestServiceMemory(t *testing.T) {
	testServiceRules(t, func(t *testing.T, c *fakeClock) *Service {
		s, err := New(NewMemory(), WithClock(c.Now))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConcurrentLockMemory(t *testing.T) {
	c := newFakeClock()
	s, err := New(NewMemory(), WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	testConcurrentLock(t, s, c)
}

// testConcurrentLock makes 50 lockers race for one path, first free, then
// held by an expired lock: each time exactly one wins.
func testConcurrentLock(t *testing.T, s *Service, c *fakeClock) {
	t.Helper()
	ctx := context.Background()
	race := func(round string) {
		checkOneWins(t, round, func(i int) error {
			l := newLock(c, "apps/staging/a/chat-app", Deploy, time.Hour)
			l.Author = "job-" + string(rune('a'+i%26))
			_, err := s.Lock(ctx, l)
			return err
		})
	}
	race("free path")
	c.Advance(2 * time.Hour)
	race("expired lock")
}

func newMemoryService(t *testing.T, c *fakeClock) *Service {
	t.Helper()
	s, err := New(NewMemory(), WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkOneWins runs 50 lockers at once and fails t unless exactly one
// succeeds and every other is refused with a *LockedError.
func checkOneWins(t *testing.T, round string, lockNo func(i int) error) {
	t.Helper()
	locktest.OneWins(t, round, lockNo, func(err error) bool {
		var le *LockedError
		return errors.As(err, &le)
	})
}

func testServiceRules(t *testing.T, newService func(*testing.T, *fakeClock) *Service) {
	ctx := context.Background()

	t.Run("lock writes only the exact path", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		got, err := s.Lock(ctx, newLock(c, "Apps/Staging", Automation, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if got.Path != "apps/staging" || !got.CreatedAt.Equal(c.Now()) || !got.UpdatedAt.Equal(c.Now()) || got.ID == "" {
			t.Errorf("Lock returned %+v", got)
		}
		all, err := s.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"apps/staging"}, paths(all)); diff != "" {
			t.Errorf("stored paths (-want +got):\n%s", diff)
		}
		if _, err := s.Get(ctx, "apps"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(apps) error = %v, want ErrNotFound", err)
		}
		// A child of a lock may not be locked, but a parent may.
		if _, err := s.Lock(ctx, newLock(c, "apps", Incident, time.Hour)); err != nil {
			t.Errorf("locking the parent: %v", err)
		}
	})

	t.Run("lock implies check", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		if _, err := s.Lock(ctx, newLock(c, "apps/staging/a/chat-app", Deploy, time.Hour)); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"apps/staging/a/chat-app", "apps/staging/a/chat-app/main"} {
			_, err := s.Lock(ctx, newLock(c, p, Deploy, time.Hour))
			var le *LockedError
			if !errors.As(err, &le) {
				t.Fatalf("second lock of %s: error = %v, want *LockedError", p, err)
			}
			if diff := cmp.Diff([]string{"apps/staging/a/chat-app"}, paths(le.Locks)); diff != "" {
				t.Errorf("blocking locks (-want +got):\n%s", diff)
			}
			want := "apps/staging/a/chat-app is locked until Sat 31 Dec, 11:30 by a deploy in apps/staging."
			if got := le.Locks[0].BlockingMessage(time.UTC); got != want {
				t.Errorf("message %q, want %q", got, want)
			}
		}
	})

	t.Run("check walks every prefix unless not recursive", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		// The child first: the parent's lock would block locking the child.
		for _, l := range []Lock{newLock(c, "apps/acceptance/a/saas-app", Deploy, time.Hour), newLock(c, "apps/acceptance", Automation, 90*time.Minute)} {
			if _, err := s.Lock(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			path      string
			recursive bool
			want      []string
		}{
			{"apps/acceptance/a/saas-app/develop", true, []string{"apps/acceptance", "apps/acceptance/a/saas-app"}},
			{"apps/acceptance/a/saas-app/develop", false, []string{}},
			{"apps/acceptance/a/saas-app", false, []string{"apps/acceptance/a/saas-app"}},
			{"apps/acceptance/b", true, []string{"apps/acceptance"}},
			{"apps/production/a", true, []string{}},
			{"apps", true, []string{}},
			{"apps/acceptance-2", true, []string{}},
		} {
			got, err := s.Check(ctx, tc.path, Deploy, tc.recursive)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, paths(got)); diff != "" {
				t.Errorf("Check(%s, recursive=%v) (-want +got):\n%s", tc.path, tc.recursive, diff)
			}
		}
	})

	t.Run("unlock must name the type", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		if _, err := s.Lock(ctx, newLock(c, "apps/production", Incident, 6*time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Unlock(ctx, "apps/production", Automation, false)
		var te *TypeError
		if !errors.As(err, &te) {
			t.Fatalf("unlock with the wrong type: error = %v, want *TypeError", err)
		}
		if want := "refusing to unlock apps/production: it is locked for an incident, not an automation run (--type automation)"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if got, _ := s.Check(ctx, "apps/production/a/auth-app", Deploy, true); len(got) != 1 {
			t.Errorf("lock gone after a refused unlock: %v", got)
		}
		removed, err := s.Unlock(ctx, "apps/production", Incident, false)
		if err != nil || len(removed) != 1 {
			t.Fatalf("unlock: %v, %v", removed, err)
		}
		if _, err := s.Unlock(ctx, "apps/production", Incident, false); !errors.Is(err, ErrNotFound) {
			t.Errorf("second unlock: error = %v, want ErrNotFound", err)
		}
		if got, _ := s.Check(ctx, "apps/production/a/auth-app", Deploy, true); len(got) != 0 {
			t.Errorf("still blocked after unlock: %v", got)
		}
	})

	t.Run("unlock recursive removes one type beneath the path", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		for _, l := range []Lock{newLock(c, "apps/staging/a", Deploy, time.Hour), newLock(c, "apps/staging/b", Deploy, time.Hour), newLock(c, "apps/staging/c", Incident, time.Hour), newLock(c, "apps/prod", Deploy, time.Hour)} {
			if _, err := s.Lock(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		removed, err := s.Unlock(ctx, "apps/staging", Deploy, true)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"apps/staging/a", "apps/staging/b"}, paths(removed)); diff != "" {
			t.Errorf("removed (-want +got):\n%s", diff)
		}
		left, _ := s.List(ctx, "")
		if diff := cmp.Diff([]string{"apps/prod", "apps/staging/c"}, paths(left)); diff != "" {
			t.Errorf("left (-want +got):\n%s", diff)
		}
		if _, err := s.Unlock(ctx, "apps/staging", Deploy, true); !errors.Is(err, ErrNotFound) {
			t.Errorf("nothing left to unlock: error = %v, want ErrNotFound", err)
		}
	})

	t.Run("expired locks never block and are replaced", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		if _, err := s.Lock(ctx, newLock(c, "apps/acceptance", Automation, 90*time.Minute)); err != nil {
			t.Fatal(err)
		}
		c.Advance(89 * time.Minute)
		if got, _ := s.Check(ctx, "apps/acceptance/a", Deploy, true); len(got) != 1 {
			t.Errorf("1 minute before expiry: %d blocking, want 1", len(got))
		}
		c.Advance(time.Minute)
		if got, _ := s.Check(ctx, "apps/acceptance/a", Deploy, true); len(got) != 0 {
			t.Errorf("at expiry: %d blocking, want 0", len(got))
		}
		if _, err := s.Lock(ctx, newLock(c, "apps/acceptance/a", Deploy, time.Hour)); err != nil {
			t.Errorf("locking under an expired lock: %v", err)
		}
		l, err := s.Lock(ctx, newLock(c, "apps/acceptance", Incident, time.Hour))
		if err != nil {
			t.Fatalf("replacing an expired lock: %v", err)
		}
		got, err := s.Get(ctx, "apps/acceptance")
		if err != nil || got.Type != Incident || got.ID != l.ID {
			t.Errorf("after replacing: %+v, %v", got, err)
		}
	})

	t.Run("prune deletes expired locks within the path", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		for _, l := range []Lock{
			newLock(c, "apps/staging/a", Deploy, time.Minute),
			newLock(c, "apps/staging/b", Deploy, time.Hour),
			newLock(c, "apps/staging", Automation, time.Minute),
			newLock(c, "apps/production", Incident, time.Minute),
			newLock(c, "apps/staging-2", Incident, time.Minute),
		} {
			if _, err := s.Lock(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		c.Advance(2 * time.Minute)
		pruned, err := s.Prune(ctx, "apps/staging")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"apps/staging", "apps/staging/a"}, paths(pruned)); diff != "" {
			t.Errorf("pruned (-want +got):\n%s", diff)
		}
		left, _ := s.List(ctx, "")
		if diff := cmp.Diff([]string{"apps/production", "apps/staging-2", "apps/staging/b"}, paths(left)); diff != "" {
			t.Errorf("left (-want +got):\n%s", diff)
		}
		pruned, err = s.Prune(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"apps/production", "apps/staging-2"}, paths(pruned)); diff != "" {
			t.Errorf("pruned everywhere (-want +got):\n%s", diff)
		}
	})

	t.Run("allow lets a type pass", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		l := newLock(c, "apps/production", Incident, 6*time.Hour)
		l.Allow = []Type{Deploy}
		if _, err := s.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Check(ctx, "apps/production/a/auth-app", Deploy, true); len(got) != 0 {
			t.Errorf("deploy blocked by a lock allowing deploys: %v", paths(got))
		}
		if got, _ := s.Check(ctx, "apps/production/a/auth-app", Automation, true); len(got) != 1 {
			t.Errorf("automation not blocked: %v", paths(got))
		}
		if _, err := s.Lock(ctx, newLock(c, "apps/production/a/auth-app", Deploy, time.Hour)); err != nil {
			t.Errorf("hotfix deploy lock: %v", err)
		}
		var le *LockedError
		if _, err := s.Lock(ctx, newLock(c, "apps/production/b", Automation, time.Hour)); !errors.As(err, &le) {
			t.Errorf("automation lock under the incident: error = %v, want *LockedError", err)
		}
	})

	t.Run("refresh moves the expiry of the held lock only", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		held, err := s.Lock(ctx, newLock(c, "apps/staging/a", Deploy, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		c.Advance(30 * time.Second)
		refreshed, err := s.Refresh(ctx, held, c.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if refreshed.ID != held.ID || !refreshed.ExpiresAt.Equal(c.Now().Add(time.Minute)) || !refreshed.UpdatedAt.Equal(c.Now()) {
			t.Errorf("refreshed %+v", refreshed)
		}
		if _, err := s.Refresh(ctx, held, c.Now().Add(time.Hour)); !errors.Is(err, ErrConflict) {
			t.Errorf("refresh with a stale version: error = %v, want ErrConflict", err)
		}
	})

	t.Run("expiry is rounded up to a whole second", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		got, err := s.Lock(ctx, newLock(c, "apps/x", Deploy, 1500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		stored, err := s.Get(ctx, "apps/x")
		if err != nil || !got.ExpiresAt.Equal(c.Now().Add(2*time.Second)) || !stored.ExpiresAt.Equal(got.ExpiresAt) {
			t.Errorf("expiry returned %v, stored %v (%v); want %v", got.ExpiresAt, stored.ExpiresAt, err, c.Now().Add(2*time.Second))
		}
	})

	t.Run("bad input", func(t *testing.T) {
		c := newFakeClock()
		s := newService(t, c)
		for _, tc := range []struct {
			name string
			l    Lock
			err  string
		}{
			{"bad path", Lock{Path: "apps//a", Type: Deploy, Author: "x", ExpiresAt: c.Now().Add(time.Hour)}, "segment 2 is empty"},
			{"bad type", Lock{Path: "apps", Type: "outage", Author: "x", ExpiresAt: c.Now().Add(time.Hour)}, `invalid lock type "outage"`},
			{"no author", Lock{Path: "apps", Type: Deploy, ExpiresAt: c.Now().Add(time.Hour)}, "author is required"},
			{"no expiry", Lock{Path: "apps", Type: Deploy, Author: "x"}, "expiry is required"},
			{"past expiry", Lock{Path: "apps", Type: Deploy, Author: "x", ExpiresAt: c.Now().Add(-time.Hour)}, "is not in the future"},
			{"bad allow", Lock{Path: "apps", Type: Deploy, Author: "x", ExpiresAt: c.Now().Add(time.Hour), Allow: []Type{"x"}}, `allow: invalid lock type "x"`},
		} {
			_, err := s.Lock(ctx, tc.l)
			var ie *InvalidError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error = %v, want an *InvalidError containing %q", tc.name, err, tc.err)
			}
		}
		if _, err := s.Check(ctx, "Apps/../x", Deploy, true); err == nil {
			t.Error("Check accepted a bad path")
		}
	})
}

// parentRace is a Storage that takes a lock at parent just before the next
// Create, as a concurrent locker would between Lock's check and its create.
type parentRace struct {
	Storage
	parent Lock
	once   sync.Once
}

func (r *parentRace) Create(ctx context.Context, l Lock) (Lock, error) {
	var err error
	r.once.Do(func() { _, err = r.Storage.Create(ctx, r.parent) })
	if err != nil {
		return Lock{}, err
	}
	return r.Storage.Create(ctx, l)
}

func TestParentLockedDuringLockMemory(t *testing.T) {
	testParentLockedDuringLock(t, NewMemory())
}

// testParentLockedDuringLock takes a child lock while a parent lock appears
// between the check and the create: the child backs off (LockedError naming
// the parent, nothing left at the child path), the parent stays.
func testParentLockedDuringLock(t *testing.T, st Storage) {
	t.Helper()
	ctx := context.Background()
	c := newFakeClock()
	parent := newLock(c, "apps/production", Incident, 6*time.Hour)
	parent.CreatedAt, parent.UpdatedAt = c.Now(), c.Now()
	s, err := New(&parentRace{Storage: st, parent: parent}, WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Lock(ctx, newLock(c, "apps/production/a/auth-app", Deploy, 5*time.Minute))
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Lock = %v, want a *LockedError", err)
	}
	if diff := cmp.Diff([]string{"apps/production"}, paths(le.Locks)); diff != "" {
		t.Errorf("blocking locks (-want +got):\n%s", diff)
	}
	all, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"apps/production"}, paths(all)); diff != "" {
		t.Errorf("stored locks (-want +got):\n%s", diff)
	}
	// A parent that allows deploys does not make the child back off.
	if _, err := s.Unlock(ctx, "apps/production", Incident, false); err != nil {
		t.Fatal(err)
	}
	allowing := parent
	allowing.Allow = []Type{Deploy}
	s2, err := New(&parentRace{Storage: st, parent: allowing}, WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Lock(ctx, newLock(c, "apps/production/a/auth-app", Deploy, 5*time.Minute)); err != nil {
		t.Errorf("Lock under a parent that allows deploys = %v, want nil", err)
	}
}
