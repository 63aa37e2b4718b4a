package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApplyOptionsOverNew: options given to one Apply apply over New's,
// are checked like New's, and leave the Reconciler unchanged.
func TestApplyOptionsOverNew(t *testing.T) {
	r, err := New(WithInsecureRegistries("a:5000"), WithRolloutTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	called := false
	one, err := r.with([]Option{WithInsecureRegistries("b:5000"), WithRolloutTimeout(0), WithProgress(func(Progress) { called = true })})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]bool{"a:5000": true, "b:5000": true}, one.o.registry.Insecure); diff != "" {
		t.Errorf("per-call insecure registries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"a:5000": true}, r.o.registry.Insecure); diff != "" {
		t.Errorf("New's insecure registries changed (-want +got):\n%s", diff)
	}
	if one.o.rolloutTimeout != 0 || r.o.rolloutTimeout != time.Minute || r.o.progress != nil {
		t.Errorf("rollout timeout %s (New's %s), New's progress set %v", one.o.rolloutTimeout, r.o.rolloutTimeout, r.o.progress != nil)
	}
	one.o.progress(Progress{})
	if !called {
		t.Error("WithProgress's function not kept")
	}
	if got, want := r.o.ttl(), 6*time.Minute; got != want {
		t.Errorf("default lock TTL = %s, want rollout timeout + 5m = %s", got, want)
	}
	if _, err := r.Apply(context.Background(), Request{}, "", WithConcurrency(0)); err == nil {
		t.Error("Apply took WithConcurrency(0)")
	}
}
