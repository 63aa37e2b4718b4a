package reconcile

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gatedLister answers BlockingWithin with the locks of the moment it was
// called, once the test lets each call return.
type gatedLister struct {
	mu      sync.Mutex
	locks   map[string][]string
	calls   int
	started chan struct{}
	release chan struct{}
}

func (g *gatedLister) BlockingWithin(context.Context, string, string) (map[string][]string, error) {
	g.mu.Lock()
	g.calls++
	snap := map[string][]string{}
	for k, v := range g.locks {
		snap[k] = v
	}
	g.mu.Unlock()
	g.started <- struct{}{}
	<-g.release
	return snap, nil
}

// TestRecheckCoalescesFreshQueries: a re-check never uses a query that began
// before it asked, and the callers that asked while one query ran share the
// next one.
func TestRecheckCoalescesFreshQueries(t *testing.T) {
	ctx := context.Background()
	g := &gatedLister{locks: map[string][]string{}, started: make(chan struct{}), release: make(chan struct{})}
	rc := newRecheck(ctx, g, "apps/prod/t1")

	type answer struct {
		who  string
		msgs []string
	}
	answers := make(chan answer, 3)
	ask := func(who, path string) {
		msgs, err := rc.blocking(ctx, path)
		if err != nil {
			t.Errorf("%s: %v", who, err)
		}
		answers <- answer{who, msgs}
	}
	go ask("a1", "apps/prod/t1/a1")
	<-g.started // a1's query runs, with no locks

	// Meanwhile someone locks b2, and b2 and c3 ask: they must not take a1's answer.
	g.mu.Lock()
	g.locks["apps/prod/t1/b2"] = []string{"An automation run on b2"}
	g.mu.Unlock()
	go ask("b2", "apps/prod/t1/b2")
	go ask("c3", "apps/prod/t1/c3")
	for waiting := 0; waiting < 2; time.Sleep(time.Millisecond) { // both wait for the next query
		rc.mu.Lock()
		if rc.next != nil {
			waiting = rc.next.askers
		}
		rc.mu.Unlock()
	}

	g.release <- struct{}{}
	<-g.started // one query for b2 and c3, begun after they asked
	g.release <- struct{}{}

	got := map[string][]string{}
	for range 3 {
		a := <-answers
		got[a.who] = a.msgs
	}
	want := map[string][]string{"a1": nil, "b2": {"An automation run on b2"}, "c3": nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if g.calls != 2 {
		t.Errorf("%d queries, want 2: b2 and c3 share the one begun after they asked", g.calls)
	}
}

// localLister reads its locks in process while local is true.
type localLister struct {
	mu    sync.Mutex
	locks map[string][]string
	local bool
	calls int
}

func (l *localLister) BlockingWithin(context.Context, string, string) (map[string][]string, error) {
	panic("the re-checks read the cache")
}

func (l *localLister) BlockingWithinCached(context.Context, string, string) (map[string][]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	return l.locks, nil
}

func (l *localLister) ReadsLocally() bool { return l.local }

// TestRecheckReadsLocalCacheDirectly: while the lister reads a copy in
// process, each re-check reads it itself, seeing a lock the moment the copy
// has it.
func TestRecheckReadsLocalCacheDirectly(t *testing.T) {
	ctx := context.Background()
	l := &localLister{locks: map[string][]string{}, local: true}
	rc := newRecheck(ctx, l, "apps/t")
	for range 3 {
		if got, err := rc.blocking(ctx, "apps/t/web"); err != nil || len(got) != 0 {
			t.Fatalf("blocking = %v, %v", got, err)
		}
	}
	l.mu.Lock()
	l.locks = map[string][]string{"apps/t/web": {"incident"}}
	l.mu.Unlock()
	got, err := rc.blocking(ctx, "apps/t/web")
	if diff := cmp.Diff([]string{"incident"}, got); diff != "" || err != nil {
		t.Errorf("blocking after the lock (-want +got), err %v:\n%s", err, diff)
	}
	if l.calls != 4 {
		t.Errorf("%d reads for 4 re-checks, want one each", l.calls)
	}
}
