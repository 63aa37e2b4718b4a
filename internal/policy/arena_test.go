package policy

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArenaForgetsTheDecision: a set's decisions one after another, and at once from many goroutines,
// each see their own input, never a value made for another in the arena it reuses.
func TestArenaForgetsTheDecision(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(c, []Rule{
		{Name: "payments", When: `plan.changes.exists(c, c.service == "payments-api")`, Required: 2},
		{Name: "major", When: `plan.changes.exists(c, isMajorBump(c))`, Required: 3},
		{Name: "failing", When: `history.exists(d, d.result == "failed")`, Required: 4},
		{Name: "locked", When: `locks.exists(l, l.service == "payments-api")`, Required: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	// input i touches payments-api when i is odd; its history failed and its lock is payments-api's
	// when i%3 == 0; its changes are major bumps when i%4 == 0.
	input := func(i int) (Input, int) {
		in := bigInput(20 + i%7)
		want := 0
		if i%2 == 1 {
			in.Plan.Changes[i%5].Service, want = "payments-api", 2
		}
		if i%3 != 0 {
			for j := range in.History {
				in.History[j].Result = "succeeded"
			}
		} else {
			in.Locks[0].Service, want = "payments-api", 5
		}
		if i%4 == 0 {
			in.Plan.Changes[3].To = ParseImage("registry.acme.com/app:9.0.0")
			want = max(want, 3)
		}
		return in, want
	}
	judge := func(i int) error {
		in, want := input(i)
		req, _, err := s.Evaluate(context.Background(), in)
		if err != nil {
			return err
		}
		if req.Required != want {
			return fmt.Errorf("decision %d: required %d, want %d (applied %v)", i, req.Required, want, req.Applied)
		}
		return nil
	}
	for i := range 24 {
		if err := judge(i); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Go(func() { errs[i] = judge(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestArenaIsReused: once a set has decided over a plan of 500 changes, its next decisions over such a
// plan reuse the memory of the variables' values (some 200 KB) rather than allocate it again.
func TestArenaIsReused(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool keeps nothing for sure")
	}
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(c, benchRules())
	if err != nil {
		t.Fatal(err)
	}
	in := bigInput(500)
	least := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, _, err := s.Evaluate(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > 150<<10 {
		t.Errorf("a decision allocated %d KB at least: the arena is not reused", least>>10)
	}
	// A decision that errs leaves its arena to the collector; the next still decides.
	bad, err := NewSet(c, []Rule{{Name: "second", When: `plan.changes[1].service == "a"`}, {Name: "any", When: `size(plan.changes) > 0`, Required: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bad.Evaluate(context.Background(), bigInput(1)); err == nil {
		t.Fatal("an index out of range was judged")
	}
	req, _, err := bad.Evaluate(context.Background(), bigInput(2))
	if diff := cmp.Diff(Requirement{Required: 2, Applied: []Applied{{Rule: "any"}}}, req); err != nil || diff != "" {
		t.Errorf("after an error: %v, requirement (-want +got):\n%s", err, diff)
	}
}
