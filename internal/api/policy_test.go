package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// countingBackend answers approvals as a Decider with an approval policy does: refused for the author,
// counted (and pending) otherwise.
type countingBackend struct {
	*backend
	author string
}

func (b *countingBackend) Approve(_ context.Context, env, hash string, who identity.Principal) (*approval.Pending, error) {
	if who.ID.Name == b.author {
		return nil, &approval.RefusedError{Environment: env, Approver: who.String(), Reason: "four-eyes: " + who.String() + " wrote commit abcdef012345"}
	}
	if !b.pending.ApprovedBy(who) {
		b.pending.Approvals = append(b.pending.Approvals, approval.NewApproval(who, time.Now()))
	}
	return b.pending, nil
}

// TestApprovalPolicyAnswers: an approval that leaves the plan short of its required approvers is 202 with
// status pending and the tally; an approval the policy refuses is 403 naming why; the one that completes
// the plan is 202 approved.
func TestApprovalPolicyAnswers(t *testing.T) {
	b := &countingBackend{backend: &backend{pending: &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p", Required: 2}}, author: "mallory"}
	// Each person has a named token: who approves is who the token is.
	people := map[string]string{"mallory": "mallory-token-000001", "alice": "alice-token-0000001", "bob": "bob-token-000000001"}
	var ts []auth.Token
	for name, tok := range people {
		ts = append(ts, auth.Token{Name: name, Token: tok, Scopes: []string{"approve:*"}})
	}
	s, err := New(b, withOps(t, auth.WithTokens(ts...)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	approve := func(who string) (int, DecisionResponse, string) {
		t.Helper()
		body, _ := json.Marshal(DecisionRequest{PlanHash: "sha256:p"})
		code, out := call(t, srv, "POST", "/api/v1/environments/prod/approve", people[who], string(body))
		var resp DecisionResponse
		_ = json.Unmarshal([]byte(out), &resp)
		return code, resp, out
	}
	code, _, out := approve("mallory")
	if code != http.StatusForbidden || !json.Valid([]byte(out)) || !strings.Contains(out, "token:mallory may not approve this plan of environment prod: four-eyes: token:mallory wrote commit abcdef012345") {
		t.Errorf("approval by the author = %d %s, want 403 naming four-eyes", code, out)
	}
	for range 2 {
		code, resp, out := approve("alice")
		want := DecisionResponse{Environment: "prod", Revision: "abcdef0123456789", PlanHash: "sha256:p", Status: "pending",
			Message: "1 of 2 approvals: token:alice; revision abcdef012345 waits for more approvals in prod", Approvers: []string{"token:alice"}, Required: 2}
		if diff := cmp.Diff(want, resp); code != http.StatusAccepted || diff != "" {
			t.Errorf("approval by alice = %d %s (-want +got):\n%s", code, out, diff)
		}
	}
	code, resp, out := approve("bob")
	if code != http.StatusAccepted || resp.Status != "approved" {
		t.Errorf("approval by bob = %d %s, want 202 approved", code, out)
	}
}
