package auth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCachedAccess: an answer is reused until it expires, per login and
// environment; an error is not remembered.
func TestCachedAccess(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	calls := 0
	fail := false
	p := CachedAccess(func(_ context.Context, login, env string) (Access, error) {
		calls++
		if fail {
			return Access{}, errors.New("GitHub is down")
		}
		return Access{Read: true, Approve: env == "staging", Why: login}, nil
	}, time.Minute, func() time.Time { return now })
	ctx := context.Background()
	for _, env := range []string{"prod", "prod", "staging", "staging"} {
		if acc, err := p(ctx, "maria", env); err != nil || acc.Approve != (env == "staging") {
			t.Fatalf("%s: %+v %v", env, acc, err)
		}
	}
	if calls != 2 {
		t.Errorf("asked %d times for two logins×environments, want 2", calls)
	}
	now = now.Add(2 * time.Minute)
	fail = true
	if _, err := p(ctx, "maria", "prod"); err == nil {
		t.Error("an expired answer was used while the policy fails")
	}
	fail = false
	if _, err := p(ctx, "maria", "prod"); err != nil || calls != 4 {
		t.Errorf("after an error: %v, %d calls; want the policy asked again", err, calls)
	}
}
