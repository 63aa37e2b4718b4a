package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// FuzzDecisionBody posts arbitrary bodies to approve and reject: the answer
// is one of the documented statuses, never a 500 or a panic, and a decision
// is taken only for a body naming the pending plan's hash, by the approver
// the token names (a typed-in approver other than that is refused).
func FuzzDecisionBody(f *testing.F) {
	f.Add([]byte(`{"planHash":"sha256:p","approver":"alice"}`), true)
	f.Add([]byte(`{"planHash":"sha256:p","approver":"bob","reason":"no"}`), false)
	f.Add([]byte(`{"planHash":"sha256:old"}`), true)
	f.Add([]byte(`{"planHash":"sha256:p","as":"x"}`), true)
	f.Add([]byte(`{"planHash":1}`), false)
	f.Add([]byte(`{"planHash":"sha256:p"} trailing`), true)
	f.Add([]byte(`{"planHash":"sha256:p"}}`), true)
	f.Add([]byte(`[`+strings.Repeat("[", 100)), true)
	f.Add([]byte(`{"planHash":"sha256:p"}`), true)
	f.Add([]byte(`{"planHash":"sha256:p","approver":"token:ops"}`), false)
	f.Add([]byte(`{"plAnHAsh":"sha256:p"}`), true) // encoding/json matches field names case-insensitively
	s, err := New(&backend{}, withOps(f), WithRateLimit(0, 0))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, approve bool) {
		b := &backend{pending: &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p"}}
		s.h.b = b
		path := "/api/v1/environments/prod/reject"
		if approve {
			path = "/api/v1/environments/prod/approve"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK, http.StatusAccepted:
			var sent DecisionRequest // exactly one JSON value, as json.Unmarshal takes it
			if err := json.Unmarshal(body, &sent); err != nil || sent.PlanHash != "sha256:p" || len(b.decided) != 1 {
				t.Fatalf("%d for %q: decided %v", w.Code, body, b.decided)
			}
			// Whatever the body says, the decision is the token's: token:ops.
			want := map[bool]string{true: "approve ", false: "reject "}[approve] + "token:" + opsName
			typedOK := sent.Approver == "" || sent.Approver == opsName || sent.Approver == "token:"+opsName
			if !typedOK || b.decided[0] != want && !strings.HasPrefix(b.decided[0], want+" ") {
				t.Fatalf("decided %q for %q", b.decided[0], body)
			}
		case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
			if len(b.decided) != 0 {
				t.Fatalf("%d for %q, yet decided %v", w.Code, body, b.decided)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}
