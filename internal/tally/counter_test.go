package tally

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

type memStore struct{ st state.EnvState }

func (m *memStore) Load(context.Context, string) (*state.EnvState, error) {
	cp := m.st
	return &cp, nil
}

func (m *memStore) Update(_ context.Context, _ string, mutate func(*state.EnvState)) error {
	mutate(&m.st)
	return nil
}

// authors lists the same authors for every range.
type authors []string

func (a authors) Authors(context.Context, string, string) ([]string, error) { return a, nil }

func github(login string) identity.Principal {
	return identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: login}}
}

func approvers(p *approval.Pending) []string {
	var out []string
	for _, a := range p.Approvals {
		out = append(out, a.Approver)
	}
	return out
}

// TestCount: approvals are counted once per person into the pending
// record, complete at approvals.required; four-eyes refuses an author,
// automation is refused where it defaults to deny, and a plan no longer
// pending (or stale) counts nothing. It starts nothing.
func TestCount(t *testing.T) {
	ctx := context.Background()
	pending := func() *memStore {
		return &memStore{st: state.EnvState{Pending: &approval.Pending{Revision: "r1", PlanHash: "sha256:01", Required: 2}}}
	}
	c := &Counter{Env: "prod", Policy: config.Approvals{Required: 2, ForbidAuthors: true}, Authors: authors{"alice@acme.example"},
		Now: func() time.Time { return time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC) }}

	store := pending()
	p, err := c.Count(ctx, store, Vote{PlanHash: "sha256:01", Who: github("bob")})
	if err != nil || p.Complete() {
		t.Fatalf("first approval: %+v, %v; want counted, not complete", p, err)
	}
	if _, err := c.Count(ctx, store, Vote{PlanHash: "sha256:01", Who: github("BOB")}); err != nil {
		t.Fatal(err)
	}
	p, err = c.Count(ctx, store, Vote{PlanHash: "sha256:01", Who: github("carol")})
	if err != nil || !p.Complete() {
		t.Fatalf("second person's approval: %+v, %v; want complete", p, err)
	}
	if diff := cmp.Diff([]string{"github:bob", "github:carol"}, approvers(store.st.Pending)); diff != "" {
		t.Errorf("approvals kept (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name string
		v    Vote
		want string // in the error
		not  bool   // a NotPendingError
	}{
		{name: "an author", v: Vote{PlanHash: "sha256:01", Who: github("alice")}, want: "four-eyes: github:alice wrote or committed commit r1"},
		{name: "automation", v: Vote{PlanHash: "sha256:01", Who: identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "ci"}}},
			want: "token:ci acts for no person (automation), and approvals.required is 2 and forbidAuthors is set"},
		{name: "another plan", v: Vote{PlanHash: "sha256:02", Who: github("bob")}, not: true},
		{name: "stale", v: Vote{PlanHash: "sha256:01", Who: github("bob"), Stale: func(*approval.Pending) bool { return true }}, not: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := pending()
			_, err := c.Count(ctx, store, tc.v)
			var np *approval.NotPendingError
			var re *approval.RefusedError
			switch {
			case tc.not && !errors.As(err, &np):
				t.Errorf("Count: %v; want a NotPendingError", err)
			case !tc.not && (!errors.As(err, &re) || !strings.Contains(re.Reason, tc.want)):
				t.Errorf("Count: %v; want a RefusedError saying %q", err, tc.want)
			}
			if len(store.st.Pending.Approvals) != 0 {
				t.Errorf("counted %v", approvers(store.st.Pending))
			}
		})
	}
}

// TestNote: a plan the rules apply to shows its tally beside it; one they
// do not, nothing.
func TestNote(t *testing.T) {
	if got := Note(&approval.Pending{Required: 2}); got != nil {
		t.Errorf("Note without reasons = %v; want none", got)
	}
	got := Note(&approval.Pending{Required: 2, Reasons: []string{"payments-api changes need 2 approvers"}})
	if len(got) != 1 || !strings.HasPrefix(got[0], "**Approval rules:** 0 of 2 approvals") {
		t.Errorf("Note = %q", got)
	}
}
