package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRollbackBody posts arbitrary bodies to rollback and release: the
// answer is one of the documented statuses, never a 500 or a panic; a
// rollback is asked only for a body with a non-blank to and reason within
// their lengths, always as the token's principal (ops), whatever the body
// says of requestedBy.
func FuzzRollbackBody(f *testing.F) {
	f.Add([]byte(`{"to":"previous","reason":"checkout 500s"}`), true)
	f.Add([]byte(`{"to":"2","reason":"x","now":true}`), true)
	f.Add([]byte(`{"to":"abcdef0","reason":"x","requestedBy":"ops"}`), true)
	f.Add([]byte(`{"to":"previous","reason":"x","requestedBy":"alice"}`), true)
	f.Add([]byte(`{"to":"999","reason":"x"}`), true)
	f.Add([]byte(`{"to":"locked","reason":"x"}`), true)
	f.Add([]byte(`{"to":-1,"reason":"x"}`), true)
	f.Add([]byte(`{"to":"previous","reason":"x"} {}`), true)
	f.Add([]byte(`{"reason":"done","requestedBy":"ops"}`), false)
	f.Add([]byte(`{"reason":"`+strings.Repeat("x", 5000)+`"}`), false)
	f.Add([]byte(`[`+strings.Repeat("{", 100)), false)
	rb := &rollbacks{}
	s, err := New(&backend{}, withOps(f), WithRateLimit(0, 0), WithRollback(rb))
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte, rollback bool) {
		rb.asked, rb.held = nil, true
		path := "/api/v1/environments/prod/release"
		if rollback {
			path = "/api/v1/environments/prod/rollback"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
			if !rollback {
				return
			}
			var sent RollbackRequest
			if err := json.Unmarshal(body, &sent); err != nil || len(rb.asked) != 1 {
				t.Fatalf("200 for %q: asked %+v", body, rb.asked)
			}
			got := rb.asked[0]
			if got.RequestedBy != opsName || strings.TrimSpace(got.To) == "" || strings.TrimSpace(got.Reason) == "" ||
				len(got.To) > maxRollbackTo || len(got.Reason) > maxReason || sent.RequestedBy != "" && sent.RequestedBy != opsName {
				t.Fatalf("rollback asked %+v for %q", got, body)
			}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge:
			if len(rb.asked) != 0 {
				t.Fatalf("%d for %q, yet asked %+v", w.Code, body, rb.asked)
			}
			var e struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%d for %q without an error: %s", w.Code, body, w.Body)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}
