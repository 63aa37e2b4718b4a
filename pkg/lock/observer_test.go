package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestObserverHearsTakenAndRemoved: the observer hears each lock the
// Service takes and removes, once, after the storage confirmed it; refused
// locks and refreshes are not heard.
func TestObserverHearsTakenAndRemoved(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	var heard []string
	svc, err := New(NewMemory(), WithClock(clock.Now), WithObserver(func(_ context.Context, c Change) {
		heard = append(heard, c.Kind+" "+c.Lock.Path+" "+string(c.Lock.Type)+" by "+c.Lock.Author+" at "+c.At.Format(time.TimeOnly))
	}))
	if err != nil {
		t.Fatal(err)
	}
	held, err := svc.Lock(ctx, newLock(clock, "apps/prod", Deploy, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Lock(ctx, newLock(clock, "apps/prod", Deploy, time.Hour)); !errors.As(err, new(*LockedError)) {
		t.Fatalf("second lock = %v, want LockedError", err)
	}
	if _, err := svc.Refresh(ctx, held, clock.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Lock(ctx, newLock(clock, "apps/dev/a", Deploy, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Lock(ctx, newLock(clock, "apps/dev/b", Deploy, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Unlock(ctx, "apps/prod", Deploy, false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := svc.Unlock(ctx, "apps/dev/a", Deploy, false); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Prune(ctx, ""); err != nil {
		t.Fatal(err)
	}
	// Removed on behalf of a verified caller (the API, the web page): heard too; refused, not.
	if _, err := svc.Lock(ctx, newLock(clock, "apps/qa", Deploy, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.For(Caller{Name: "mallory"}).Unlock(ctx, "apps/qa", Deploy, false); !errors.As(err, new(*ForbiddenError)) {
		t.Fatalf("For(another).Unlock = %v, want ForbiddenError", err)
	}
	if _, err := svc.For(Caller{Name: "tester"}).Unlock(ctx, "apps/qa", Deploy, false); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"taken apps/prod deploy by tester at 10:30:00",
		"taken apps/dev/a deploy by tester at 10:30:00",
		"taken apps/dev/b deploy by tester at 10:30:00",
		"released apps/prod deploy by tester at 10:30:00",
		"released apps/dev/a deploy by tester at 10:32:00",
		"pruned apps/dev/b deploy by tester at 10:32:00",
		"taken apps/qa deploy by tester at 10:32:00",
		"released apps/qa deploy by tester at 10:32:00",
	}
	if diff := cmp.Diff(want, heard); diff != "" {
		t.Errorf("observer heard (-want +got):\n%s", diff)
	}
}
