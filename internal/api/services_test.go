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
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// servicesBackend is prod with web in sync in two targets, deployed by
// entry 1 of the history into one of them.
type servicesBackend struct{ backend }

var deployed = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func (b *servicesBackend) Environment(_ context.Context, env string) (*status.Environment, error) {
	changes, _ := json.Marshal([]reconcile.Change{{Service: "web", Target: "a", To: "example.com/web:2.0.0"}})
	inSync := func(target string) status.ServiceTarget {
		return status.ServiceTarget{Target: target, Namespace: "shop", State: status.StateInSync,
			Images: []status.Image{{DockerName: "web", Desired: "web:2.0.0", Live: "web:2.0.0"}}}
	}
	return &status.Environment{Name: env, Observation: status.Observation{Services: []status.Service{
		{Name: "web", Version: "2.0.0", Targets: []status.ServiceTarget{inSync("a"), inSync("b")}}}},
		History: []approval.Entry{{Revision: "abc", Result: approval.ResultSucceeded, Changes: changes, Finished: deployed}}}, nil
}

func TestGetService(t *testing.T) {
	s, err := New(&servicesBackend{}, withOps(t))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	code, body := call(t, ts, http.MethodGet, "/api/v1/services/web", token, "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/services/web = %d %s", code, body)
	}
	var got ServiceResponse
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := ServiceResponse{Service: "web", Placements: []status.Placement{
		{Environment: "prod", Target: "a", Namespace: "shop", Service: "web", Version: "2.0.0", Container: "web", Live: "web:2.0.0",
			Desired: "web:2.0.0", State: "in-sync", Running: true, Since: deployed, SinceRevision: "abc"},
		{Environment: "prod", Target: "b", Namespace: "shop", Service: "web", Version: "2.0.0", Container: "web", Live: "web:2.0.0",
			Desired: "web:2.0.0", State: "in-sync", Running: true},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		path, tok string
		code      int
		msg       string
	}{
		{"/api/v1/services/nope", token, http.StatusNotFound, `no service \"nope\" in any environment`},
		{"/api/v1/services/" + strings.Repeat("x", 300), token, http.StatusBadRequest, "at most 253"},
		{"/api/v1/services/web", "wrong", http.StatusUnauthorized, "bearer token"},
	} {
		if code, body := call(t, ts, http.MethodGet, tc.path, tc.tok, ""); code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("GET %s = %d %s, want %d %q", tc.path[:min(len(tc.path), 40)], code, body, tc.code, tc.msg)
		}
	}
	code, body = call(t, ts, http.MethodGet, "/api/v1/matrix", token, "")
	if code != http.StatusOK || !strings.Contains(body, `"state": "in sync"`) || !strings.Contains(body, `"service": "web"`) {
		t.Errorf("GET /api/v1/matrix = %d %s", code, body)
	}
}
