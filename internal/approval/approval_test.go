package approval

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// recorder is a Gate that answers with dec and err and records what it hears.
type recorder struct {
	name  string
	dec   Decision
	err   error
	heard *[]string
}

func (r recorder) Propose(context.Context, Proposal) (Decision, error) {
	*r.heard = append(*r.heard, r.name+" propose")
	return r.dec, r.err
}

func (r recorder) Superseded(_ context.Context, _ Proposal, by string) error {
	*r.heard = append(*r.heard, r.name+" superseded by "+by)
	return r.err
}

func (r recorder) Completed(_ context.Context, _ Proposal, o Outcome) error {
	*r.heard = append(*r.heard, r.name+" "+o.Result)
	return r.err
}

func TestGates(t *testing.T) {
	ctx := context.Background()
	var heard []string
	down := errors.New("github down")
	g := Gates(Manual(), recorder{name: "github", err: down, heard: &heard}, Auto(), recorder{name: "later", dec: Decision{Approved: true, Approver: "later"}, heard: &heard})
	p := Proposal{Environment: "prod", Revision: "abc", Plan: &reconcile.Plan{PlanHash: "sha256:p"}}
	dec, err := g.Propose(ctx, p)
	if !errors.Is(err, down) {
		t.Errorf("Propose error = %v, want the failing gate's", err)
	}
	if want := (Decision{Approved: true, Approver: AutoApprover}); dec != want {
		t.Errorf("Propose = %+v, want the first approval, %+v", dec, want)
	}
	if err := g.Superseded(ctx, p, "def"); !errors.Is(err, down) {
		t.Errorf("Superseded error = %v", err)
	}
	if err := g.Completed(ctx, p, Outcome{Result: ResultRejected}); !errors.Is(err, down) {
		t.Errorf("Completed error = %v", err)
	}
	want := []string{"github propose", "later propose", "github superseded by def", "later superseded by def", "github rejected", "later rejected"}
	if diff := cmp.Diff(want, heard); diff != "" {
		t.Errorf("every gate hears everything (-want +got):\n%s", diff)
	}
	if dec, err := Gates(Manual()).Propose(ctx, p); err != nil || dec.Approved {
		t.Errorf("Manual Propose = %+v, %v; want pending", dec, err)
	}
}

// starter is a recorder that also hears Started.
type starter struct{ recorder }

func (s starter) Started(_ context.Context, _ Proposal, approver string) error {
	*s.heard = append(*s.heard, s.name+" started by "+approver)
	return s.err
}

func TestGatesStarted(t *testing.T) {
	var heard []string
	down := errors.New("github down")
	g := Gates(Manual(), starter{recorder{name: "deployments", err: down, heard: &heard}}, recorder{name: "checks", heard: &heard},
		starter{recorder{name: "chat", heard: &heard}})
	s, ok := g.(Starter)
	if !ok {
		t.Fatal("Gates does not implement Starter")
	}
	p := Proposal{Environment: "prod", Revision: "abc", Plan: &reconcile.Plan{PlanHash: "sha256:p"}}
	if err := s.Started(context.Background(), p, "maria"); !errors.Is(err, down) {
		t.Errorf("Started error = %v, want the failing gate's", err)
	}
	want := []string{"deployments started by maria", "chat started by maria"}
	if diff := cmp.Diff(want, heard); diff != "" {
		t.Errorf("only Starters hear Started, each of them (-want +got):\n%s", diff)
	}
}

func TestNotPendingError(t *testing.T) {
	err := fmt.Errorf("approving: %w", &NotPendingError{Environment: "prod", PlanHash: "sha256:old",
		Pending: &Pending{Revision: "abc", PlanHash: "sha256:new"}})
	var np *NotPendingError
	if !errors.Is(err, ErrNotPending) || !errors.As(err, &np) || np.Pending.PlanHash != "sha256:new" {
		t.Errorf("%v: want errors.Is ErrNotPending and errors.As *NotPendingError", err)
	}
	want := "approving: plan sha256:old is not pending in environment prod: pending now is plan sha256:new for revision abc"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if errors.Is(errors.New("other"), ErrNotPending) {
		t.Error("an unrelated error matches ErrNotPending")
	}
}

func TestCheckNames(t *testing.T) {
	if got := CheckName("prod"); got != "stagehand/prod" {
		t.Errorf("CheckName = %q", got)
	}
	for _, tc := range []struct {
		name, env string
		ok        bool
	}{
		{"stagehand/prod", "prod", true},
		{PreviewName("prod"), "", false},
		{"stagehand/", "", false},
		{"stagehand/a/b", "", false},
		{"ci/build", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, ok := EnvOfCheck(tc.name)
			if env != tc.env || ok != tc.ok {
				t.Errorf("EnvOfCheck(%q) = %q, %v; want %q, %v", tc.name, env, ok, tc.env, tc.ok)
			}
		})
	}
}
