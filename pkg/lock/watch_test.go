package lock

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestWatchedListsFromTheWatch: a lock written through the API server
// reaches Watched.ListCached within the watch's latency, and so does its
// deletion; Blocking-style reads through the Service see it too.
func TestWatchedListsFromTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := newKubeStorage(t)
	w := runWatched(t, ctx, k)
	svc, err := New(w)
	if err != nil {
		t.Fatal(err)
	}
	seen := func(want int) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			ls, err := w.ListCached(ctx, "apps")
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) == want {
				return time.Since(start)
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("ListCached never held %d locks", want)
		return 0
	}
	l, err := svc.Lock(ctx, Lock{Path: "apps/prod/web", Type: Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a new lock reached the watch after %s", seen(1))
	ls, err := svc.WithinCached(ctx, "apps/prod", Deploy)
	if err != nil || len(ls) != 1 || ls[0].Path != "apps/prod/web" {
		t.Errorf("WithinCached = %v, %v; want the lock at apps/prod/web", ls, err)
	}
	if err := k.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	t.Logf("its deletion reached the watch after %s", seen(0))
}

// TestWatchStopsWithItsContext: once the context ends Run returns and no
// goroutine of the informer is left.
func TestWatchStopsWithItsContext(t *testing.T) {
	before := informerGoroutines()
	ctx, cancel := context.WithCancel(context.Background())
	w := newKubeStorage(t).Watched()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !w.Synced(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch never caught up")
		}
	}
	if informerGoroutines() == before {
		t.Fatal("no informer goroutine while watching")
	}
	if err := w.Run(ctx); err == nil {
		t.Error("a second Run started")
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run = %v, want nil once its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not stop")
	}
	for deadline := time.Now().Add(10 * time.Second); informerGoroutines() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d informer goroutines left, %d before", informerGoroutines(), before)
		}
	}
}

// TestWatchFailsFast: when the objects cannot be listed (nothing listens
// at the address), Run returns the error instead of retrying forever.
func TestWatchFailsFast(t *testing.T) {
	cfg := rest.CopyConfig(cluster.Env(t).Config)
	cfg.Host = "https://127.0.0.1:1"
	k, err := NewKubernetesForConfig(cfg, "default")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := k.Watched().Run(context.Background()); err == nil || !strings.Contains(err.Error(), "watching lock objects in namespace default") {
		t.Errorf("Run = %v; want the list's error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Watch took %s to fail", took)
	}
}

// informerGoroutines counts the goroutines running client-go's informer
// machinery (goleak-style, by their stacks).
func informerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "k8s.io/client-go/tools/cache.") || strings.Contains(g, "pkg/lock.(*Watched).Run") {
			n++
		}
	}
	return n
}

// runWatched runs k's watch until the test ends and returns it once caught up.
func runWatched(t *testing.T, ctx context.Context, k *Kubernetes) *Watched {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := k.Watched()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !w.Synced(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch never caught up")
		}
	}
	return w
}

// TestServiceWatched: a Service hands out its storage for running the watch
// only when it is a *Watched.
func TestServiceWatched(t *testing.T) {
	mem, err := New(NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mem.Watched(); ok {
		t.Error("memory storage reported as Watched")
	}
	w := newKubeStorage(t).Watched()
	svc, err := New(w)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := svc.Watched(); !ok || got != w {
		t.Errorf("Watched() = %v, %v; want the storage", got, ok)
	}
	// Before Run, cached reads go to the API server.
	if ls, err := w.ListCached(context.Background(), ""); err != nil || len(ls) != 0 {
		t.Errorf("ListCached before Run = %v, %v", ls, err)
	}
}
