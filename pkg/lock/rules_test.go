package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMaxDurations: the defaults, an override per type, NoMaximum, and a
// lock given by its end (expires_at) measured like one given by duration.
func TestMaxDurations(t *testing.T) {
	c := newFakeClock()
	s, err := New(NewMemory(), WithClock(c.Now), WithMaxDurations(map[Type]time.Duration{Incident: 2 * time.Hour, Freeze: NoMaximum}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	by := Caller{Name: "token:ci"}
	for _, tc := range []struct {
		name    string
		t       Type
		d       time.Duration
		wantErr string
	}{
		{"deploy within the default", Deploy, 24 * time.Hour, ""},
		{"deploy past the default", Deploy, 24*time.Hour + time.Second, "lock apps/deploy-past-the-default: a deploy lasting 24h0m1s is refused: a lock of type deploy lasts at most 1d"},
		{"automation past the default", Automation, 7 * time.Hour, "a lock of type automation lasts at most 6h"},
		{"incident past its override", Incident, 3 * time.Hour, "a lock of type incident lasts at most 2h"},
		{"ten-year freeze without a maximum", Freeze, 3650 * 24 * time.Hour, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "apps/" + strings.ReplaceAll(tc.name, " ", "-")
			_, err := s.For(by).Lock(ctx, Lock{Path: path, Type: tc.t, ExpiresAt: c.Now().Add(tc.d)})
			var ie *InvalidError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Agent.Lock = %v, want it taken", err)
			case tc.wantErr != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Agent.Lock = %v, want an *InvalidError containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := New(NewMemory(), WithMaxDurations(map[Type]time.Duration{Deploy: 0})); err == nil {
		t.Error("WithMaxDurations(deploy: 0) accepted, want an error")
	}
	// The reconciler's own locks and rollback holds are not bound by the maximum.
	if _, err := s.PlaceHold(ctx, NewHold("apps/prod", "stagehand:rollback", c.Now().Add(30*24*time.Hour), nil)); err != nil {
		t.Errorf("PlaceHold of 30 days: %v", err)
	}
}

// TestCheckerKnowsItsFormerName: the reconciler writes its apply lock as
// ReconcilerAuthor, and still takes a lock left under ReservedAuthor by an
// older build for its own.
func TestCheckerKnowsItsFormerName(t *testing.T) {
	ctx := context.Background()
	c := newFakeClock()
	s := newMemoryService(t, c)
	if _, err := s.Lock(ctx, Lock{Path: "apps/prod/a", Type: Deploy, Author: ReservedAuthor, ExpiresAt: c.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	next := newChecker(t, s, time.UTC, TakeOverOwnLocks(ReconcilerAuthor, ReservedAuthor))
	if msgs, _ := next.Blocking(ctx, "apps/prod/a/web", "deploy"); len(msgs) != 0 {
		t.Errorf("the old build's apply lock blocks the new one: %v", msgs)
	}
	release, err := next.Hold(ctx, "apps/prod/a", time.Minute, ReconcilerAuthor)
	if err != nil {
		t.Fatalf("Hold over the old build's apply lock: %v", err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if !IsReconcilerAuthor(ReservedAuthor) || !IsReconcilerAuthor(ReconcilerAuthor) || IsReconcilerAuthor("github:stagehand-reconciler") {
		t.Error("IsReconcilerAuthor does not know the reconciler's names")
	}
}
