package lock

import (
	"strings"
	"testing"
	"time"
)

// TestOptionsBelongToOneConstructor checks that each constructor takes its
// own options and names the mistake when given another's or a bad value.
func TestOptionsBelongToOneConstructor(t *testing.T) {
	svc, err := New(NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	newSvc := func(opts ...Option) error { _, err := New(NewMemory(), opts...); return err }
	newChecker := func(opts ...Option) error { _, err := NewChecker(svc, time.UTC, opts...); return err }
	for _, tc := range []struct {
		name    string
		build   func(...Option) error
		opts    []Option
		wantErr string // "" for success
	}{
		{"service with clock", newSvc, []Option{WithClock(time.Now)}, ""},
		{"service with nil clock", newSvc, []Option{WithClock(nil)}, "WithClock: clock must not be nil"},
		{"service with take-over", newSvc, []Option{TakeOverOwnLocks("bot")}, "New does not take TakeOverOwnLocks; it takes WithClock"},
		{"checker with take-over", newChecker, []Option{TakeOverOwnLocks("bot")}, ""},
		{"checker with empty author", newChecker, []Option{TakeOverOwnLocks(" ")}, "TakeOverOwnLocks: author must not be empty"},
		{"checker with clock", newChecker, []Option{WithClock(time.Now)}, "NewChecker does not take WithClock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(tc.opts...)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := NewChecker(nil, nil); err == nil {
		t.Error("NewChecker(nil service): no error")
	}
}
