package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// rollbacks is a hand-written Rollbacker that records what it was asked and
// refuses as the real one does for unknown environments and targets.
type rollbacks struct {
	asked []RollbackRequest
	held  bool
}

func (r *rollbacks) Rollback(_ context.Context, env string, req RollbackRequest) (*RollbackResponse, error) {
	if env != "prod" {
		return nil, fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
	}
	if req.To == "999" {
		return nil, fmt.Errorf("%w: unknown history entry 999 in environment prod", ErrUnknownRollbackTarget)
	}
	if req.To == "nolockpath" {
		return nil, fmt.Errorf("environment prod has no lockPath in reconciler.yaml: %w", ErrRollbackNotConfigured)
	}
	if req.To == "locked" {
		return nil, &lock.LockedError{Path: "apps/prod/hold", Type: lock.Hold, Locks: []lock.Lock{{Path: "apps/prod/hold", Type: lock.Incident}}}
	}
	r.asked = append(r.asked, req)
	r.held = true
	return &RollbackResponse{Environment: env, Action: "opened", PR: 7, Services: []string{}, Message: "rollback of prod opened"}, nil
}

func (r *rollbacks) Release(_ context.Context, env string, req ReleaseRequest) (*ReleaseResponse, error) {
	if !r.held {
		return nil, fmt.Errorf("prod has no hold to release: %w", lock.ErrNotFound)
	}
	r.held = false
	return &ReleaseResponse{Environment: env, Message: "released by " + req.RequestedBy}, nil
}

func TestRollbackRoutes(t *testing.T) {
	rb := &rollbacks{}
	srv := newServer(t, &backend{}, withOps(t), WithRollback(rb))
	const path = "/api/v1/environments/prod/rollback"
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantBody                 string
	}{
		{"no to", "POST", path, `{"reason": "x"}`, 400, "to is required"},
		{"no reason", "POST", path, `{"to": "previous"}`, 400, "reason is required"},
		{"unknown field", "POST", path, `{"to": "previous", "reason": "x", "force": true}`, 400, `unknown field \"force\"`},
		{"two objects", "POST", path, `{"to": "previous", "reason": "x"}{}`, 400, "data after the JSON object"},
		{"to too long", "POST", path, `{"to": "` + strings.Repeat("a", 65) + `", "reason": "x"}`, 400, "to is 65 bytes long; at most 64"},
		{"unknown environment", "POST", "/api/v1/environments/qa/rollback", `{"to": "previous", "reason": "x"}`, 404, "unknown environment"},
		{"unknown history entry", "POST", path, `{"to": "999", "reason": "x"}`, 404, "unknown history entry 999"},
		{"another lock at the hold's path", "POST", path, `{"to": "locked", "reason": "x"}`, 409, "apps/prod/hold is locked"},
		{"no lockPath for the hold", "POST", path, `{"to": "nolockpath", "reason": "x"}`, 409, "has no lockPath"},
		{"GET", "GET", path, "", 405, ""},
		{"release without a hold", "POST", "/api/v1/environments/prod/release", `{}`, 404, "prod has no hold to release"},
		{"rollback", "POST", path, `{"to": "previous", "reason": "broken"}`, 200, `"pr": 7`},
		{"release as another", "POST", "/api/v1/environments/prod/release", `{"requestedBy": "bob"}`, 400, "requestedBy comes from your credentials: you are ops (token)"},
		{"release by a reader", "POST", "/api/v1/environments/prod/release", `{}`, 403, "needs scope approve:prod"},
		{"release", "POST", "/api/v1/environments/prod/release", `{"requestedBy": "ops"}`, 200, "released by ops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := token
			if strings.Contains(tt.name, "reader") {
				tok = viewerToken
			}
			code, body := call(t, srv, tt.method, tt.path, tok, tt.body)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%s %s: %d %s; want %d containing %q", tt.method, tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	// Only the valid request reached the Rollbacker, by the verified caller, with its typed identity.
	want := []RollbackRequest{{To: "previous", Reason: "broken", RequestedBy: "ops", Caller: identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "ops"}}}}
	if diff := cmp.Diff(want, rb.asked); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	// Without a Rollbacker (no github.app) both routes say why.
	plain := newServer(t, &backend{}, withOps(t))
	for _, p := range []string{path, "/api/v1/environments/prod/release"} {
		if code, body := call(t, plain, "POST", p, token, `{}`); code != 501 || !strings.Contains(body, "github.app") {
			t.Errorf("POST %s without rollbacks: %d %s", p, code, body)
		}
	}
}
