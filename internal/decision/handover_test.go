package decision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/state"
)

// TestTakeHandover: taking a decision from the queue removes that decision
// only (by ID, or by every field for one an older replica wrote); the others,
// handed over before or after it was read, stay for the next pick-up.
func TestTakeHandover(t *testing.T) {
	at := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	alice := state.Handover{ID: "a", Approve: true, PlanHash: "sha256:p", Approver: "alice", At: at}
	bob := state.Handover{ID: "b", PlanHash: "sha256:p", Approver: "bob", Reason: "no", At: at}
	old := state.Handover{Approve: true, PlanHash: "sha256:p", Approver: "carol", At: at}
	for _, tt := range []struct {
		name   string
		stored []state.Handover
		take   state.Handover
		want   []state.Handover
	}{
		{name: "the decision read", stored: []state.Handover{alice}, take: alice, want: nil},
		{name: "the first of two", stored: []state.Handover{alice, bob}, take: alice, want: []state.Handover{bob}},
		{name: "the second of two", stored: []state.Handover{alice, bob}, take: bob, want: []state.Handover{alice}},
		{name: "alike but for the ID", stored: []state.Handover{alice}, take: state.Handover{ID: "c", Approve: true, PlanHash: "sha256:p", Approver: "alice", At: at}, want: []state.Handover{alice}},
		{name: "an older replica's after a JSON round trip", stored: []state.Handover{alice, old}, take: state.Handover{Approve: true, PlanHash: "sha256:p", Approver: "carol", At: at.Local()}, want: []state.Handover{alice}},
		{name: "gone already", stored: []state.Handover{bob}, take: alice, want: []state.Handover{bob}},
		{name: "nothing", stored: nil, take: alice, want: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &state.EnvState{Handovers: append([]state.Handover(nil), tt.stored...)}
			takeHandover(tt.take)(st)
			if diff := cmp.Diff(tt.want, st.Handovers); diff != "" {
				t.Errorf("handovers left (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandoverPrincipal: a decision handed over is read back typed, with the person it acts for; a bare
// name written by a replica older than typed identities reads as that legacy name, which is no typed
// identity (not github:alice).
func TestHandoverPrincipal(t *testing.T) {
	alice := identity.ID{Kind: identity.GitHub, Name: "alice"}
	for _, tt := range []struct {
		name string
		h    state.Handover
		want identity.Principal
	}{
		{"github user", state.Handover{Approver: "github:alice"}, identity.Principal{ID: alice}},
		{"token for alice", state.Handover{Approver: "token:alice-cli", ActsFor: "github:alice"},
			identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "alice-cli"}, ActsFor: alice}},
		{"older replica", state.Handover{Approver: "alice"}, identity.Principal{ID: identity.ID{Name: "alice"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := handoverPrincipal(tt.h)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
			if tt.h.ActsFor == "" && got.ID.Legacy() && got.ID.Equal(alice) {
				t.Errorf("a legacy name equals %s", alice)
			}
		})
	}
}

// TestNextHandover: rejections are taken before approvals, each kind in the order handed over.
func TestNextHandover(t *testing.T) {
	a1 := state.Handover{ID: "a1", Approve: true}
	a2 := state.Handover{ID: "a2", Approve: true}
	r1 := state.Handover{ID: "r1"}
	r2 := state.Handover{ID: "r2"}
	for _, tt := range []struct {
		name string
		q    []state.Handover
		want string
	}{
		{name: "empty", q: nil, want: ""},
		{name: "approvals in order", q: []state.Handover{a1, a2}, want: "a1"},
		{name: "a rejection after an approval", q: []state.Handover{a1, r1}, want: "r1"},
		{name: "rejections in order", q: []state.Handover{a2, r2, a1, r1}, want: "r2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := nextHandover(tt.q)
			if ok != (tt.want != "") || got.ID != tt.want {
				t.Errorf("nextHandover = %q, %v; want %q", got.ID, ok, tt.want)
			}
		})
	}
}
