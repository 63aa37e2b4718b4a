package lockapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestStatusOf: each error the lock API meets, wrapped as the service
// wraps it, is answered with its status and code; every row of the table
// is held by a case (the cases count each row's match).
func TestStatusOf(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{&lock.ForbiddenError{Caller: lock.Caller{Name: "token:ci"}, Locks: []lock.Lock{{Path: "apps/x", Author: "github:alice"}}}, 403, CodeForbidden},
		{fmt.Errorf("locking: %w", &lock.RefusedError{Reason: "locks.rule refuses"}), 403, CodeForbidden},
		{fmt.Errorf("locking: %w", &lock.LockedError{Path: "apps/x", Type: lock.Deploy}), 423, CodeLocked},
		{&lock.TypeError{Lock: lock.Lock{Path: "apps/x", Type: lock.Automation}, Want: lock.Incident}, 409, CodeLockTypeMismatch},
		{&bodyError{msg: "decoding lock request: the body is larger than 65536 bytes", cause: &http.MaxBytesError{Limit: maxBody}}, 413, CodeTooLarge},
		{invalid(errors.New("query parameter type is required")), 400, CodeBadRequest},
		{fmt.Errorf("getting lock apps/x: %w", lock.ErrNotFound), 404, CodeLockNotFound},
		{fmt.Errorf("writing lock apps/x: %w", lock.ErrConflict), 409, CodeConflict},
		{errBadToken, 401, CodeUnauthorized},
		{errors.New("listing locks: the server is currently unable to handle the request"), 500, CodeInternal},
	}
	held := make([]int, len(errorKinds()))
	for _, tc := range cases {
		t.Run(tc.code+": "+tc.err.Error(), func(t *testing.T) {
			if status, code := StatusOf(tc.err); status != tc.status || code != tc.code {
				t.Errorf("StatusOf = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
		})
		for i, k := range errorKinds() {
			if k.match(tc.err) {
				held[i]++
				break
			}
		}
	}
	for i, n := range held {
		if n == 0 {
			t.Errorf("no case is answered by row %d (%d %s)", i, errorKinds()[i].status, errorKinds()[i].code)
		}
	}
}

// TestHandlerErrorBodies: the handler's answers over its cap and without
// its token carry their code; WithErrorWriter answers every error but a
// 423 the mounting server's way, and a 423 stays the locks.
func TestHandlerErrorBodies(t *testing.T) {
	svc := newMemoryService(t, newFakeClock())
	srv := newAPI(t, svc)
	big := `{"path":"apps/x","type":"deploy","author":"a","links":{"x":"` + strings.Repeat("a", maxBody) + `"}}`
	if code, body := call(t, srv, "POST", "/api/v1/locks", testToken, big); code != 413 || body["code"] != CodeTooLarge ||
		body["error"] != fmt.Sprintf("decoding lock request: the body is larger than %d bytes", maxBody) {
		t.Errorf("over the cap: %d %v, want 413 TooLarge", code, body)
	}

	var seen []error
	h, err := NewHandler(svc, testToken, WithErrorWriter(func(w http.ResponseWriter, err error) {
		seen = append(seen, err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(`{"error":"mine","code":"Mine"}`))
	}))
	if err != nil {
		t.Fatal(err)
	}
	mounted := httptest.NewServer(h)
	t.Cleanup(mounted.Close)
	if code, body := call(t, mounted, "GET", "/api/v1/locks/apps/none", testToken, ""); code != http.StatusTeapot || body["code"] != "Mine" ||
		len(seen) != 1 || !errors.Is(seen[0], lock.ErrNotFound) {
		t.Errorf("with the server's writer: %d %v (errors %v), want its answer to lock.ErrNotFound", code, body, seen)
	}
	if code, _ := call(t, mounted, "POST", "/api/v1/locks", testToken, `{"path":"apps/x","type":"incident","author":"a","duration":"1h"}`); code != 201 {
		t.Fatalf("lock: %d", code)
	}
	if code, body := call(t, mounted, "POST", "/api/v1/locks", testToken, `{"path":"apps/x/y","type":"deploy","author":"b","duration":"1h"}`); code != http.StatusLocked ||
		body["code"] != CodeLocked || body["locked"] != true || len(seen) != 1 {
		t.Errorf("locked with the server's writer: %d %v, want 423 with the locks", code, body)
	}
	if _, err := NewHandler(svc, testToken, WithErrorWriter(nil)); err == nil {
		t.Error("WithErrorWriter(nil) accepted")
	}
}
