package lockapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// callerHeader names the test's caller; in the API server the caller is the
// verified principal instead. "!" at the end marks an admin.
const callerHeader = "X-Test-Caller"

func newOwnedAPI(t *testing.T, s *lock.Service) *httptest.Server {
	t.Helper()
	h, err := NewHandler(s, "", WithCaller(func(r *http.Request) (lock.Caller, error) {
		name, admin := strings.CutSuffix(r.Header.Get(callerHeader), "!")
		return lock.Caller{Name: name, Admin: admin}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func callAs(t *testing.T, srv *httptest.Server, who, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(callerHeader, who)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestNewHandlerCaller(t *testing.T) {
	s := newMemoryService(t, newFakeClock())
	if _, err := NewHandler(s, "", WithCaller(nil)); err == nil || !strings.Contains(err.Error(), "nil function") {
		t.Errorf("WithCaller(nil) = %v", err)
	}
}

func TestOwnershipMemory(t *testing.T) {
	m, c := lock.NewMemory(), newFakeClock()
	s, err := lock.New(m, lock.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	testOwnership(t, s, c, func(*testing.T) []string { return m.Unlocks() })
}

func TestOwnershipKubernetes(t *testing.T) {
	k, cfg, ns := newKubeStorage(t)
	c := newFakeClock()
	s, err := lock.New(k, lock.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	events, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testOwnership(t, s, c, func(t *testing.T) []string {
		evs, err := events.Resource(corev1.SchemeGroupVersion.WithResource("events")).Namespace(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + lock.UnlockedReason})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs.Items {
			msg, _ := e.Object["message"].(string)
			kind, _, _ := unstructuredString(e.Object, "involvedObject", "kind")
			out = append(out, kind+": "+msg)
		}
		return out
	})
}

func unstructuredString(o map[string]any, keys ...string) (string, bool, error) {
	var cur any = o
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[k]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// testOwnership: a lock belongs to whoever the server says took it; only
// they, or an admin (recorded), remove it while it lives.
func testOwnership(t *testing.T, s *lock.Service, clock *fakeClock, recorded func(*testing.T) []string) {
	ctx := context.Background()
	srv := newOwnedAPI(t, s)
	// The body's author is not who took the lock.
	code, body := callAs(t, srv, "alice", "POST", "/api/v1/locks", `{"path":"apps/prod","type":"deploy","author":"mallory","duration":"1h"}`)
	if code != http.StatusCreated || !strings.Contains(body, `"author":"alice"`) {
		t.Fatalf("alice locks = %d %s, want 201 by alice", code, body)
	}
	// Nor can anyone lock as the reconciler, whatever their verified name.
	if code, body := callAs(t, srv, lock.ReservedAuthor, "POST", "/api/v1/locks", `{"path":"apps/qa","type":"deploy","duration":"1h"}`); code != http.StatusBadRequest || !strings.Contains(body, "reserved") {
		t.Errorf("a caller named %s locks = %d %s, want 400", lock.ReservedAuthor, code, body)
	}
	// The reconciler's own apply lock, taken as the daemon does.
	if _, err := s.Lock(ctx, lock.Lock{Path: "apps/staging", Type: lock.Deploy, Author: lock.ReservedAuthor, ExpiresAt: s.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who, path string
		wantCode  int
		wantBody  string
	}{
		{"bob", "/api/v1/locks/apps/prod?type=deploy", 403, "bob may remove only their own locks, and apps/prod (deploy by alice) is not: removing the locks of others needs lock:admin"},
		{"bob", "/api/v1/locks/apps?type=deploy&recursive=true", 403, "apps/prod (deploy by alice), apps/staging (deploy by stagehand-reconciler)"},
		{"alice", "/api/v1/locks/apps?type=deploy&recursive=true", 403, "apps/staging (deploy by stagehand-reconciler)"},
		{"bob", "/api/v1/locks/apps/staging?type=deploy", 403, "deploy by stagehand-reconciler"},
	} {
		if code, body := callAs(t, srv, tc.who, "DELETE", tc.path, ""); code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s: DELETE %s = %d %s, want %d containing %q", tc.who, tc.path, code, body, tc.wantCode, tc.wantBody)
		}
	}
	all, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("after refused unlocks %d locks remain, want both: %+v", len(all), all)
	}
	if got := recorded(t); len(got) != 0 {
		t.Errorf("refused unlocks recorded %q", got)
	}
	// The author removes her own; an admin removes the reconciler's, recorded.
	if code, body := callAs(t, srv, "alice", "DELETE", "/api/v1/locks/apps/prod?type=deploy", ""); code != http.StatusOK {
		t.Errorf("alice unlocks her own = %d %s", code, body)
	}
	if code, body := callAs(t, srv, "carol!", "DELETE", "/api/v1/locks/apps/staging?type=deploy", ""); code != http.StatusOK {
		t.Errorf("carol (lock:admin) unlocks = %d %s", code, body)
	}
	want := []string{"deploy lock apps/staging of stagehand-reconciler unlocked by carol (lock:admin)"}
	got := recorded(t)
	for i := range got {
		got[i] = strings.TrimPrefix(got[i], "Lock: ")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded unlocks (-want +got):\n%s", diff)
	}
	// An expired lock of someone else blocks nothing, and anyone may clear it.
	if _, err := s.Lock(ctx, lock.Lock{Path: "apps/dev", Type: lock.Deploy, Author: "dave", ExpiresAt: s.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if code, body := callAs(t, srv, "bob", "DELETE", "/api/v1/locks/apps/dev?type=deploy", ""); code != http.StatusOK {
		t.Errorf("bob clears dave's expired lock = %d %s", code, body)
	}
}
