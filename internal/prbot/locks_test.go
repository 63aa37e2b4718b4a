package prbot

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// TestLockClientJudgesExpiryOnItsClock: a lock beneath a stage, listed by
// the reconciler with its expiry on the API server's clock, blocks until
// that expiry by the clock LockClient is given (the bot's, GitHub's), not by
// this host's: the clock given here is the only one read.
func TestLockClientJudgesExpiryOnItsClock(t *testing.T) {
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Lock(context.Background(), lock.Lock{Path: "apps/prod/web", Type: lock.Deploy, Author: "ops", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	h, err := lockapi.NewHandler(svc, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	ls := httptest.NewServer(h)
	t.Cleanup(ls.Close)
	lc, err := lockapi.NewClient(ls.URL, "lock-token")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		now     time.Duration
		blocked bool
	}{{"now", 0, true}, {"59m on", 59 * time.Minute, true}, {"61m on", 61 * time.Minute, false}} {
		t.Run(c.name, func(t *testing.T) {
			r := LockClient(lc, func() time.Time { return time.Now().Add(c.now) }).(restLocks)
			got, err := r.BlockingWithin(context.Background(), "apps/prod", string(lock.Deploy))
			if err != nil {
				t.Fatal(err)
			}
			if blocked := len(got["apps/prod/web"]) > 0; blocked != c.blocked {
				t.Errorf("a lock expiring in 1h, %s: blocking = %v, want %v (%v)", c.name, blocked, c.blocked, got)
			}
		})
	}
}
