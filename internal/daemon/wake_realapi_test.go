package daemon

import (
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/wake"
)

// TestBellRealAPI: internal/wake's TestWatchPollsAfterItsFirstList on the
// real API server. A ring before the watch began (a replica that has just
// begun to lead) is not lost: the first list calls missed, not rung; a ring
// while watching calls rung.
func TestBellRealAPI(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	ringer := &wake.Bell{Client: env.Clientset, Namespace: ns, Identity: "b", Now: time.Now, Log: logr.Discard()}
	if err := ringer.Ring(ctx); err != nil {
		t.Fatal(err)
	}
	rung, missed := make(chan struct{}, 10), make(chan struct{}, 10)
	b := &wake.Bell{Client: env.Clientset, Namespace: ns, Identity: "a", Now: time.Now, Log: logr.Discard()}
	go b.Watch(ctx, func() { rung <- struct{}{} }, func() { missed <- struct{}{} })
	select {
	case <-missed:
	case <-rung:
		t.Fatal("the ring before the watch began was told as a ring seen")
	case <-time.After(10 * time.Second):
		t.Fatal("no poll for the ring before the watch began")
	}
	// The watch starts after the list: ring until a ring is seen.
	deadline := time.Now().Add(10 * time.Second)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatal("no rung for a ring while watching")
		}
		if err := ringer.Ring(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-rung:
			seen = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	select {
	case <-missed:
		t.Error("a ring while watching was told as missed")
	default:
	}
}
