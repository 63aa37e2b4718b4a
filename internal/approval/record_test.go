package approval

import (
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// TestApprovedBy: a plan's approvers are compared as typed identities and counted per person: alice through
// GitHub and through a token acting for her is one approver; a GitHub login and a token of the same name
// are two; a bare name recorded before identities were typed blocks anyone of that name from counting
// twice.
func TestApprovedBy(t *testing.T) {
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	alice := identity.ID{Kind: identity.GitHub, Name: "alice"}
	githubAlice := identity.Principal{ID: alice}
	aliceToken := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "alice-cli"}, ActsFor: alice}
	aliceSA := identity.Principal{ID: identity.ID{Kind: identity.Kubernetes, Name: "system:serviceaccount:ci:alice-bot"}, ActsFor: alice}
	githubLocker := identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: "ci-locker"}}
	tokenLocker := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "ci-locker"}}
	for _, tc := range []struct {
		name      string
		approvals []Approval
		who       identity.Principal
		want      bool
	}{
		{"github then her token", []Approval{NewApproval(githubAlice, at)}, aliceToken, true},
		{"her token then github", []Approval{NewApproval(aliceToken, at)}, githubAlice, true},
		{"her token then her service account", []Approval{NewApproval(aliceToken, at)}, aliceSA, true},
		{"github login without case", []Approval{NewApproval(githubAlice, at)}, identity.Principal{ID: identity.ID{Kind: identity.GitHub, Name: "ALICE"}}, true},
		{"github login and a token of its name", []Approval{NewApproval(githubLocker, at)}, tokenLocker, false},
		{"token and a github login of its name", []Approval{NewApproval(tokenLocker, at)}, githubLocker, false},
		{"the same automation token", []Approval{NewApproval(tokenLocker, at)}, tokenLocker, true},
		{"legacy bare name", []Approval{{Approver: "alice", At: at}}, githubAlice, true},
		{"legacy bare name, her token", []Approval{{Approver: "alice", At: at}}, aliceToken, true},
		{"legacy bare name of another", []Approval{{Approver: "bob", At: at}}, githubAlice, false},
		{"nobody yet", nil, githubAlice, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pending{Approvals: tc.approvals}
			if got := p.ApprovedBy(tc.who); got != tc.want {
				t.Errorf("ApprovedBy(%s) = %v, want %v", tc.who, got, tc.want)
			}
		})
	}
}

// TestNewApproval: the record names the credential as kind:name and the person it acts for, and reads back
// as the same principal.
func TestNewApproval(t *testing.T) {
	alice := identity.ID{Kind: identity.GitHub, Name: "alice"}
	p := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "alice-cli"}, ActsFor: alice}
	a := NewApproval(p, time.Time{})
	if a.Approver != "token:alice-cli" || a.For != "github:alice" {
		t.Errorf("NewApproval = %+v, want approver token:alice-cli for github:alice", a)
	}
	if got := a.Principal(); got != p {
		t.Errorf("Principal() = %+v, want %+v", got, p)
	}
	if a := NewApproval(identity.Principal{ID: alice}, time.Time{}); a.Approver != "github:alice" || a.For != "" {
		t.Errorf("NewApproval(github:alice) = %+v", a)
	}
}

// TestIsAuto: the approver Auto records is Stagehand's own typed identity, and a record written before
// identities were typed is still read as Auto's.
func TestIsAuto(t *testing.T) {
	if AutoApprover != identity.SkipConfirmation.String() {
		t.Errorf("AutoApprover = %q, want %q", AutoApprover, identity.SkipConfirmation)
	}
	for in, want := range map[string]bool{AutoApprover: true, "skipConfirmation": true, "github:skipConfirmation": false, "token:skipConfirmation": false, "alice": false} {
		if got := IsAuto(in); got != want {
			t.Errorf("IsAuto(%q) = %v, want %v", in, got, want)
		}
	}
}
