package lockapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

const testToken = "s3cret-token"

func newAPI(t *testing.T, s *lock.Service) *httptest.Server {
	t.Helper()
	h, err := NewHandler(s, testToken)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newMemoryService(t *testing.T, c *fakeClock) *lock.Service {
	t.Helper()
	s, err := lock.New(lock.NewMemory(), lock.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call does one raw request and returns the status and the decoded JSON body.
func call(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		m = map[string]any{"raw": string(b)} // the mux's own 405 is plain text
	}
	return resp.StatusCode, m
}

func TestNewHandlerNeedsToken(t *testing.T) {
	if _, err := NewHandler(newMemoryService(t, newFakeClock()), ""); err == nil {
		t.Error("NewHandler accepted an empty token")
	}
}

func TestHandlerRoutes(t *testing.T) {
	h, err := NewHandler(newMemoryService(t, newFakeClock()), testToken)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range h.Routes() {
		mux.Handle(r, h)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/api/v1/locks", 200},
		{"GET", "/api/v1/locks/apps/x", 404},
		{"GET", "/api/v1/check/apps/x", 200},
		{"DELETE", "/api/v1/locks?expired=true", 200},
		{"PUT", "/api/v1/locks", 405},
		{"GET", "/healthz", 200},
	} {
		if code, body := call(t, srv, tc.method, tc.path, testToken, ""); code != tc.code {
			t.Errorf("%s %s = %d %v, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
}

func TestAPIAuth(t *testing.T) {
	srv := newAPI(t, newMemoryService(t, newFakeClock()))
	for _, tok := range []string{"", "wrong", testToken + "x"} {
		code, body := call(t, srv, "GET", "/api/v1/locks", tok, "")
		if code != http.StatusUnauthorized || body["error"] != "missing or wrong bearer token" || body["code"] != CodeUnauthorized {
			t.Errorf("token %q: %d %v, want 401", tok, code, body)
		}
	}
	if code, _ := call(t, srv, "GET", "/api/v1/locks", testToken, ""); code != http.StatusOK {
		t.Errorf("right token: %d, want 200", code)
	}
}

func TestAPIRaw(t *testing.T) {
	c := newFakeClock()
	srv := newAPI(t, newMemoryService(t, c))
	steps := []struct {
		name, method, path, body string
		code                     int
		want                     map[string]any // keys that must have these values
	}{
		{name: "lock", method: "POST", path: "/api/v1/locks",
			body: `{"path":"Apps/Acceptance","type":"automation","author":"qa","links":{"run":"https://ci/1"},"duration":"90m","env":{"cluster":"testing","account":"staging"}}`,
			code: 201, want: map[string]any{"message": "Locked apps/acceptance for an automation run until Sat 31 Dec, 12:00"}},
		{name: "lock beneath is refused", method: "POST", path: "/api/v1/locks",
			body: `{"path":"apps/acceptance/a","type":"deploy","author":"dev","expires_at":1672489800}`,
			code: 423, want: map[string]any{"locked": true, "path": "apps/acceptance/a", "type": "deploy",
				"messages": []any{"apps/acceptance is locked until Sat 31 Dec, 12:00 by an automation run in testing/staging."}}},
		{name: "get", method: "GET", path: "/api/v1/locks/apps/acceptance", code: 200},
		{name: "get of type", method: "GET", path: "/api/v1/locks/apps/acceptance?type=automation", code: 200},
		{name: "get of another type", method: "GET", path: "/api/v1/locks/apps/acceptance?type=incident", code: 404,
			want: map[string]any{"error": "getting lock apps/acceptance: no lock of type incident (it is locked for an automation run)"}},
		{name: "get none", method: "GET", path: "/api/v1/locks/apps/acceptance/a", code: 404},
		{name: "check locked", method: "GET", path: "/api/v1/check/apps/acceptance/a/saas-app/develop", code: 423,
			want: map[string]any{"locked": true, "messages": []any{"apps/acceptance is locked until Sat 31 Dec, 12:00 by an automation run in testing/staging."}}},
		{name: "check leaf only", method: "GET", path: "/api/v1/check/apps/acceptance/a/saas-app/develop?recursive=false", code: 200,
			want: map[string]any{"locked": false, "locks": []any{}}},
		{name: "check bad type", method: "GET", path: "/api/v1/check/apps?type=outage", code: 400},
		{name: "check bad path", method: "GET", path: "/api/v1/check/apps/a_b", code: 400},
		{name: "unlock without type", method: "DELETE", path: "/api/v1/locks/apps/acceptance", code: 400,
			want: map[string]any{"error": "query parameter type is required: the type of the lock to remove"}},
		{name: "unlock wrong type", method: "DELETE", path: "/api/v1/locks/apps/acceptance?type=incident", code: 409,
			want: map[string]any{"error": "refusing to unlock apps/acceptance: it is locked for an automation run, not an incident (--type incident)"}},
		{name: "bad duration", method: "POST", path: "/api/v1/locks", body: `{"path":"apps/x","type":"deploy","author":"a","duration":"5y"}`, code: 400},
		{name: "both expiries", method: "POST", path: "/api/v1/locks", body: `{"path":"apps/x","type":"deploy","author":"a","duration":"5m","expires_at":1672489800}`, code: 400,
			want: map[string]any{"error": "duration and expires_at are mutually exclusive"}},
		{name: "bad json", method: "POST", path: "/api/v1/locks", body: `{"path":`, code: 400},
		{name: "the reconciler's author", method: "POST", path: "/api/v1/locks", body: `{"path":"apps/x","type":"deploy","author":"stagehand-reconciler","duration":"5m"}`, code: 400,
			want: map[string]any{"error": `author "stagehand-reconciler" is reserved for the reconciler's own deploy locks, which do not block it; lock under your own name`}},
		{name: "prune needs expired=true", method: "DELETE", path: "/api/v1/locks", code: 400},
		{name: "list", method: "GET", path: "/api/v1/locks?path=apps", code: 200},
		{name: "unlock", method: "DELETE", path: "/api/v1/locks/apps/acceptance?type=automation", code: 200},
		{name: "check free", method: "GET", path: "/api/v1/check/apps/acceptance/a/saas-app/develop", code: 200,
			want: map[string]any{"locked": false}},
	}
	// Every error answer names its kind, as every route of the API does.
	codes := map[int]string{400: CodeBadRequest, 404: CodeLockNotFound, 409: CodeLockTypeMismatch, 423: CodeLocked}
	for _, st := range steps {
		code, body := call(t, srv, st.method, st.path, testToken, st.body)
		if code != st.code {
			t.Errorf("%s: %s %s = %d %v, want %d", st.name, st.method, st.path, code, body, st.code)
			continue
		}
		if want := codes[code]; code >= 400 && (body["code"] != want || body["error"] == nil || body["error"] == "") {
			t.Errorf("%s: %s %s = %d %v, want code %q and an error", st.name, st.method, st.path, code, body, want)
		}
		if code < 400 && body["code"] != nil {
			t.Errorf("%s: %s %s = %d %v, want no code", st.name, st.method, st.path, code, body)
		}
		for k, v := range st.want {
			if diff := cmp.Diff(v, body[k]); diff != "" {
				t.Errorf("%s: %s (-want +got):\n%s", st.name, k, diff)
			}
		}
	}
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	c := newFakeClock()
	srv := newAPI(t, newMemoryService(t, c))
	cl, err := NewClient(srv.URL, testToken, WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	l, err := cl.Lock(ctx, LockRequest{Lock: lock.Lock{Path: "apps/production", Type: lock.Incident, Author: "oncall", Allow: []lock.Type{lock.Deploy}}, Duration: "6h"})
	if err != nil {
		t.Fatal(err)
	}
	want := lock.Lock{Path: "apps/production", Type: lock.Incident, Author: "oncall", Allow: []lock.Type{lock.Deploy}, Links: map[string]string{},
		CreatedAt: c.Now(), UpdatedAt: c.Now(), ExpiresAt: c.Now().Add(6 * time.Hour), Env: lock.Env{Cluster: "apps", Account: "production"}}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("Lock (-want +got):\n%s", diff)
	}
	if got, err := cl.Get(ctx, "apps/production"); err != nil || !cmp.Equal(want, got) {
		t.Errorf("Get = %+v, %v", got, err)
	}
	if _, err := cl.Get(ctx, "apps/nothing"); !errors.Is(err, lock.ErrNotFound) {
		t.Errorf("Get(none) error = %v, want lock.ErrNotFound", err)
	}
	var le *lock.LockedError
	if _, err := cl.Lock(ctx, LockRequest{Lock: lock.Lock{Path: "apps/production/a", Type: lock.Automation, Author: "qa"}, Duration: "1h"}); !errors.As(err, &le) || len(le.Locks) != 1 || le.Locks[0].Path != "apps/production" {
		t.Errorf("Lock beneath an incident: error = %v, want *lock.LockedError", err)
	}
	if got, err := cl.Check(ctx, "apps/production/a/auth-app", lock.Automation, true); err != nil || len(got) != 1 {
		t.Errorf("Check(automation) = %v, %v; want 1 lock", got, err)
	}
	if got, err := cl.Check(ctx, "apps/production/a/auth-app", lock.Deploy, true); err != nil || len(got) != 0 {
		t.Errorf("Check(deploy) through a lock allowing deploys = %v, %v; want none", got, err)
	}
	var ie *lock.InvalidError
	if _, err := cl.Check(ctx, "apps//a", lock.Deploy, true); !errors.As(err, &ie) {
		t.Errorf("Check(bad path) error = %v, want *lock.InvalidError", err)
	}
	if _, err := cl.Lock(ctx, LockRequest{Lock: lock.Lock{Path: "apps/x", Type: lock.Deploy, Author: "a"}, Duration: "soon"}); !errors.As(err, &ie) {
		t.Errorf("Lock(bad duration) error = %v, want *lock.InvalidError", err)
	}
	if _, err := cl.Unlock(ctx, "apps/production", lock.Deploy, false); !errors.Is(err, lock.ErrConflict) || !strings.Contains(err.Error(), "refusing to unlock") {
		t.Errorf("Unlock(wrong type) error = %v", err)
	}
	c.Advance(7 * time.Hour)
	pruned, err := cl.Prune(ctx, "apps")
	if err != nil || len(pruned) != 1 {
		t.Errorf("Prune = %v, %v; want the expired incident", pruned, err)
	}
	if ls, err := cl.List(ctx, ""); err != nil || len(ls) != 0 {
		t.Errorf("List = %v, %v; want none", ls, err)
	}
	if _, err := NewClient("ftp://x", testToken); err == nil {
		t.Error("NewClient accepted ftp://")
	}
	bad, _ := NewClient(srv.URL, "nope-123", WithHTTPClient(srv.Client()))
	var ae *APIError
	if _, err := bad.List(ctx, ""); !errors.As(err, &ae) || ae.StatusCode != 401 || strings.Contains(err.Error(), "nope-123") {
		t.Errorf("wrong token: error = %v, want a 401 APIError that does not echo the token", err)
	}
}

func TestConcurrentLockREST(t *testing.T) {
	ctx := context.Background()
	c := newFakeClock()
	srv := newAPI(t, newMemoryService(t, c))
	testConcurrentREST(ctx, t, srv)
}

// testConcurrentREST makes 50 clients race for one path through the API.
func testConcurrentREST(ctx context.Context, t *testing.T, srv *httptest.Server) {
	t.Helper()
	cl, err := NewClient(srv.URL, testToken, WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	checkOneWins(t, "through the API", func(int) error {
		_, err := cl.Lock(ctx, LockRequest{Lock: lock.Lock{Path: "apps/staging/a/chat-app", Type: lock.Deploy, Author: "job"}, Duration: "5m"})
		return err
	})
}
