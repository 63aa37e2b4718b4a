package rollback

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// rollback --now pins the rolled-back versions and approves, as the caller,
// only the plan of that pin, proposed after it: a plan carrying more than
// the pin, a refused approval, an environment needing more approvers and a
// plan never proposed all leave it pending, each saying why.
func TestIncidentApprovesOnlyThePin(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	web := func(tag string) string {
		return `{"services": [{"name": "web", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"
	}
	c1 := gh.Repo("acme", "manifests").Commit("main", map[string]string{
		"environments/prod/manifest.json": `{"includes": ["./web.json"]}` + "\n", "environments/prod/web.json": web("1.0.0")}, "prod")
	gh.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/web.json": web("2.0.0")}, "web 2")
	rest, err := github.NewClient(gh.Client()).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	bot, err := prbot.New(rest, "acme", "manifests")
	if err != nil {
		t.Fatal(err)
	}
	history := []approval.Entry{
		{ID: 2, Revision: c1, Result: approval.ResultSucceeded},
	}
	plan := func(changes ...reconcile.Change) json.RawMessage {
		b, err := json.Marshal(reconcile.Plan{Environment: "prod", PlanHash: "h1", Changes: changes})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	back := reconcile.Change{Service: "web", Container: "web", From: "web:2.0.0", To: "web:1.0.0"}
	alice := identity.Principal{ID: identity.Parse("github:alice")}
	tests := []struct {
		name string
		// pending is the plan the environment shows once pinned (nil: none).
		pending      json.RawMessage
		proposedLate bool
		approve      func(string, identity.Principal) (*approval.Pending, error)
		wantApproval string
		wantMessage  string
		wantApproved bool
	}{
		{name: "the pin's plan is approved as the caller", pending: plan(back), approve: func(string, identity.Principal) (*approval.Pending, error) {
			return &approval.Pending{Approvals: []approval.Approval{{Approver: "github:alice"}}}, nil
		}, wantApproval: "approved", wantMessage: "its plan h1 was approved by github:alice and is being applied", wantApproved: true},
		{name: "a plan with more than the pin waits", pending: plan(back, reconcile.Change{Service: "api", Container: "api", From: "api:1", To: "api:2"}),
			wantApproval: "pending", wantMessage: "was not approved: its changes differ from the rollback's, it also changes"},
		{name: "a refused approval waits", pending: plan(back), approve: func(string, identity.Principal) (*approval.Pending, error) {
			return nil, &approval.RefusedError{Reason: "not an approver"}
		}, wantApproval: "pending", wantMessage: "waits for an approver (approving it as github:alice was refused", wantApproved: true},
		{name: "one of two approvals", pending: plan(back), approve: func(string, identity.Principal) (*approval.Pending, error) {
			return &approval.Pending{Required: 2, Approvals: []approval.Approval{{Approver: "github:alice"}}}, nil
		}, wantApproval: "pending", wantMessage: "has 1 of the 2 approvals it needs", wantApproved: true},
		{name: "a plan of the versions rolled back from is not the pin's", pending: plan(reconcile.Change{Service: "web", Container: "web", From: "web:1.0.0", To: "web:2.0.0"}),
			wantApproval: "pending", wantMessage: "its plan was not proposed within 1s"},
		{name: "a plan proposed before the pin is not the pin's", pending: plan(back), proposedLate: true,
			wantApproval: "pending", wantMessage: "its plan was not proposed within 1s"},
		{name: "no plan at all", wantApproval: "pending", wantMessage: "its plan was not proposed within 1s"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := lock.New(lock.NewMemory())
			if err != nil {
				t.Fatal(err)
			}
			var (
				pin      *approval.Pin
				approved []string
			)
			rec := &fakeReconciler{history: history,
				pin: func(p *approval.Pin) error { pin = p; return nil },
				environment: func() *status.Environment {
					if pin == nil || tt.pending == nil {
						return &status.Environment{}
					}
					at := pin.At.Add(time.Second)
					if tt.proposedLate {
						at = pin.At.Add(-time.Second)
					}
					return &status.Environment{Pending: &approval.Pending{PlanHash: "h1", Plan: tt.pending, ProposedAt: at}}
				},
				approve: func(h string, who identity.Principal) (*approval.Pending, error) {
					approved = append(approved, h+" by "+who.ID.String())
					if tt.approve == nil {
						return nil, errors.New("unexpected approval")
					}
					return tt.approve(h, who)
				}}
			rb := newRollbacker(t, bot, svc, rec)
			res, err := rb.Rollback(ctx, "prod", api.RollbackRequest{To: "2", Reason: "incident " + string(rune('a'+i)), Now: true, Caller: alice})
			if err != nil {
				t.Fatal(err)
			}
			if pin == nil || pin.By != "github:alice" || len(pin.Services) != 1 || pin.Services[0].Containers[0].DockerTag != "1.0.0" ||
				pin.Replaced[0].Containers[0].DockerTag != "2.0.0" {
				t.Fatalf("pin = %+v, want web 2.0.0 → 1.0.0 by github:alice", pin)
			}
			if res.Approval != tt.wantApproval || !strings.Contains(res.Message, tt.wantMessage) {
				t.Errorf("approval %q, message %q; want %q saying %q", res.Approval, res.Message, tt.wantApproval, tt.wantMessage)
			}
			if tt.wantApproved != (len(approved) == 1) || (len(approved) == 1 && approved[0] != "h1 by github:alice") {
				t.Errorf("approvals asked: %q, want one (h1 by github:alice): %v", approved, tt.wantApproved)
			}
		})
	}
}
