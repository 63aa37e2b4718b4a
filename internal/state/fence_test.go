package state

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

func TestFenceTerm(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  int64
	}{{FenceToken(7, "replica-a"), 7}, {"", -1}, {"x/replica-a", -1}, {"7", -1}, {"0/a/b", 0}} {
		if got := fenceTerm(tc.token); got != tc.want {
			t.Errorf("fenceTerm(%q) = %d, want %d", tc.token, got, tc.want)
		}
	}
}

// TestCheckFence: a fenced Store writes only over a state its term claimed
// (a state about to be created is claimed by the write), and is told once
// that it lost the state, however often it is refused; an unfenced Store
// (a decision handed over by a replica that holds nothing) writes anywhere.
func TestCheckFence(t *testing.T) {
	mine, later := FenceToken(3, "replica-a"), FenceToken(4, "replica-b")
	state := func(token string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stagehand-state-prod", Namespace: "stagehand"}}
		if token != "" {
			cm.Annotations = map[string]string{annoFence: token}
		}
		return cm
	}
	for _, tc := range []struct {
		name    string
		fenced  bool
		cm      *corev1.ConfigMap
		create  bool
		fenced2 bool // the write is refused with ErrFenced
		// wantToken is the annotation after the check.
		wantToken string
	}{
		{name: "unfenced over another term", cm: state(later), wantToken: later},
		{name: "unfenced creating", cm: state(""), create: true},
		{name: "own term", fenced: true, cm: state(mine), wantToken: mine},
		{name: "creating claims it", fenced: true, cm: state(""), create: true, wantToken: mine},
		{name: "a later term", fenced: true, cm: state(later), fenced2: true, wantToken: later},
		{name: "an earlier term", fenced: true, cm: state(FenceToken(2, "replica-a")), fenced2: true, wantToken: FenceToken(2, "replica-a")},
		{name: "never claimed", fenced: true, cm: state(""), fenced2: true},
		{name: "same term, another replica", fenced: true, cm: state(FenceToken(3, "replica-b")), fenced2: true, wantToken: FenceToken(3, "replica-b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost := 0
			s := NewStore(fake.NewClientset(), "stagehand")
			if tc.fenced {
				s = s.Fenced(mine, func() { lost++ })
			}
			for range 2 {
				err := s.fence.check(tc.cm, tc.create)
				if got := errors.Is(err, ErrFenced); got != tc.fenced2 || (err != nil && !got) {
					t.Fatalf("fence.check = %v, want ErrFenced: %v", err, tc.fenced2)
				}
			}
			if want := map[bool]int{true: 1}[tc.fenced2]; lost != want {
				t.Errorf("told %d times it lost the state, want %d", lost, want)
			}
			if got := tc.cm.Annotations[annoFence]; got != tc.wantToken {
				t.Errorf("fence annotation = %q, want %q", got, tc.wantToken)
			}
		})
	}
}

// TestClaim: a term claims a state never claimed (creating it) or claimed by
// an earlier term, and is told the term before; it cannot claim back a state
// a later term claimed; its own claim again changes nothing.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s := NewStore(client, "stagehand")
	steps := []struct {
		token    string
		wantPrev int64
		fenced   bool
		// wantToken is the fence annotation after the claim.
		wantToken string
	}{
		{FenceToken(1, "a"), -1, false, FenceToken(1, "a")},
		{FenceToken(1, "a"), 1, false, FenceToken(1, "a")},
		{FenceToken(2, "b"), 1, false, FenceToken(2, "b")},
		{FenceToken(1, "a"), 2, true, FenceToken(2, "b")},
		{FenceToken(5, "a"), 2, false, FenceToken(5, "a")},
	}
	for i, step := range steps {
		prev, err := s.Claim(ctx, "prod", step.token)
		if prev != step.wantPrev || errors.Is(err, ErrFenced) != step.fenced || (err != nil && !step.fenced) {
			t.Fatalf("step %d: Claim(%q) = %d, %v; want %d, fenced %v", i, step.token, prev, err, step.wantPrev, step.fenced)
		}
		cm, err := client.CoreV1().ConfigMaps("stagehand").Get(ctx, ConfigMapName("prod"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cm.Annotations[annoFence]; got != step.wantToken {
			t.Errorf("step %d: fence annotation = %q, want %q", i, got, step.wantToken)
		}
		if term, err := s.FencedTerm(ctx, "prod"); err != nil || term != fenceTerm(step.wantToken) {
			t.Errorf("step %d: FencedTerm = %d, %v; want %d", i, term, err, fenceTerm(step.wantToken))
		}
	}
	// A fenced Store's writes go on after its claim, and what it wrote stays.
	a := s.Fenced(FenceToken(5, "a"), nil)
	if err := a.SetPending(ctx, "prod", &approval.Pending{Revision: "r", PlanHash: "sha256:p"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("sha256:p", got.Pending.PlanHash); diff != "" {
		t.Errorf("pending after the fenced write (-want +got):\n%s", diff)
	}
	if term, err := s.FencedTerm(ctx, "unknown"); err != nil || term != -1 {
		t.Errorf("FencedTerm of a state never written = %d, %v; want -1", term, err)
	}
}

// TestHolds: a fenced Store holds env while its state names the Store's term,
// and no longer once a later term claimed it (told once it lost it); an
// unfenced Store holds everything without reading.
func TestHolds(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s := NewStore(client, "stagehand")
	if err := s.Holds(ctx, "prod"); err != nil {
		t.Errorf("unfenced Holds = %v, want nil", err)
	}
	mine := FenceToken(1, "a")
	lost := 0
	a := s.Fenced(mine, func() { lost++ })
	if a.Term() != mine || s.Term() != "" {
		t.Errorf("Term = %q and %q, want %q and \"\"", a.Term(), s.Term(), mine)
	}
	if _, err := s.Claim(ctx, "prod", mine); err != nil {
		t.Fatal(err)
	}
	if err := a.Holds(ctx, "prod"); err != nil {
		t.Errorf("Holds in its own term = %v, want nil", err)
	}
	if _, err := s.Claim(ctx, "prod", FenceToken(2, "b")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.Holds(ctx, "prod"); !errors.Is(err, ErrFenced) {
			t.Errorf("Holds after a later claim = %v, want ErrFenced", err)
		}
	}
	if lost != 1 {
		t.Errorf("told %d times it lost the state, want 1", lost)
	}
}
