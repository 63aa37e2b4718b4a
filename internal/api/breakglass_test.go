package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
)

// BreakGlass is the backend's approval.BreakGlasser: the pending plan named, by the verified caller.
func (b *backend) BreakGlass(_ context.Context, env, hash string, why approval.Why) (*approval.Pending, error) {
	who, reason := why.By, why.Reason
	if _, err := approval.CheckReason(reason); err != nil {
		return nil, err
	}
	return b.decide(env, hash, "break-glass "+who.String()+" "+reason)
}

// TestBreakGlass: POST /api/v1/environments/{env}/break-glass lets the plan named through as the verified
// caller, with a reason; the scope is had through the environment's break-glass rule (by default
// lock:admin or approve:<env>), and a missing, huge or forged reason, another environment's or a stale
// planHash, and a typed-in approver are refused before anything is decided.
func TestBreakGlass(t *testing.T) {
	b := &backend{pending: &approval.Pending{Revision: "3f2a9c1d0e", PlanHash: "sha256:p", Required: 2,
		Approvals: []approval.Approval{{Approver: "github:alice"}}}}
	srv := newServer(t, b, withOps(t, auth.WithBreakGlass(func(string) []string { return nil })))
	const path = "/api/v1/environments/prod/break-glass"
	for _, tc := range []struct {
		name, tok, path, body string
		status                int
		want                  string
	}{
		{name: "lock:admin breaks the glass", tok: adminToken, body: `{"planHash": "sha256:p", "reason": " INC-42: payments down "}`,
			status: http.StatusAccepted, want: `"status":"break-glass","message":"break-glass by token:oncall; 1 of 2 approvals: github:alice; revision 3f2a9c1d0e goes out`},
		{name: "approve:* breaks the glass", tok: token, body: `{"planHash": "sha256:p", "reason": "INC-42"}`, status: http.StatusAccepted, want: `break-glass by token:` + opsName},
		{name: "approving elsewhere is not enough", tok: stagingToken, body: `{"planHash": "sha256:p", "reason": "INC-42"}`,
			status: http.StatusForbidden, want: `needs scope break-glass:prod: breaking the glass in prod needs one of lock:admin, approve:prod`},
		{name: "lock alone is not enough", tok: lockerToken, body: `{"planHash": "sha256:p", "reason": "INC-42"}`, status: http.StatusForbidden},
		{name: "no reason", tok: adminToken, body: `{"planHash": "sha256:p"}`, status: http.StatusBadRequest, want: "reason: break-glass reason refused: empty"},
		{name: "a forged line", tok: adminToken, body: `{"planHash": "sha256:p", "reason": "x\nbreak-glass by github:ceo"}`,
			status: http.StatusBadRequest, want: "control character U+000A"},
		{name: "a huge reason", tok: adminToken, body: `{"planHash": "sha256:p", "reason": "` + strings.Repeat("x", 501) + `"}`,
			status: http.StatusBadRequest, want: "501 characters long"},
		{name: "a stale planHash", tok: adminToken, body: `{"planHash": "sha256:old", "reason": "INC-42"}`, status: http.StatusConflict, want: `"code":"NotPending"`},
		{name: "no planHash", tok: adminToken, body: `{"reason": "INC-42"}`, status: http.StatusBadRequest, want: "planHash is required"},
		{name: "a typed-in approver", tok: adminToken, body: `{"planHash": "sha256:p", "reason": "INC-42", "approver": "github:ceo"}`,
			status: http.StatusBadRequest, want: `unknown field \"approver\"`},
		{name: "another environment", tok: token, path: "/api/v1/environments/staging/break-glass", body: `{"planHash": "sha256:p", "reason": "INC-42"}`,
			status: http.StatusNotFound, want: `"code":"UnknownEnvironment"`},
		{name: "no credentials", body: `{"planHash": "sha256:p", "reason": "INC-42"}`, status: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			if tc.path != "" {
				p = tc.path
			}
			status, body := call(t, srv, "POST", p, tc.tok, tc.body)
			var compact bytes.Buffer
			if json.Compact(&compact, []byte(body)) == nil {
				body = compact.String()
			}
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("POST %s = %d %s; want %d with %q", p, status, body, tc.status, tc.want)
			}
		})
	}
	want := []string{"break-glass token:oncall INC-42: payments down", "break-glass token:" + opsName + " INC-42"}
	if strings.Join(b.decided, "|") != strings.Join(want, "|") {
		t.Errorf("decided %q, want %q: only the accepted requests reach the backend, as their verified callers, the reason trimmed", b.decided, want)
	}
}
