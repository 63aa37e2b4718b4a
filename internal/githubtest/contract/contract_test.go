package contract

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMatchAndValidate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		path      string
		body      string
		wantRoute string // "" when no operation matches
		wantParam map[string]string
		valid     bool
	}{
		{"enterprise prefix and a slashed path", http.MethodGet, "/api/v3/repos/acme/manifests/contents/environments/prod/manifest.json", "",
			"/repos/{owner}/{repo}/contents/{path}", map[string]string{"path": "environments/prod/manifest.json"}, true},
		{"ref with slashes", http.MethodGet, "/repos/acme/manifests/commits/feature/x/check-runs", "",
			"/repos/{owner}/{repo}/commits/{ref}/check-runs", map[string]string{"ref": "feature/x"}, true},
		{"a body GitHub refuses", http.MethodPost, "/repos/acme/manifests/check-runs", `{"name": 1}`,
			"/repos/{owner}/{repo}/check-runs", nil, false},
		{"no such operation", http.MethodGet, "/repos/acme/manifests/no-such-thing", "", "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			op, err := Match(r)
			if tc.wantRoute == "" {
				if err == nil {
					t.Fatalf("Match found %s, want none", op.Route.Path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if op.Route.Path != tc.wantRoute {
				t.Errorf("route %s, want %s", op.Route.Path, tc.wantRoute)
			}
			for k, v := range tc.wantParam {
				if op.Params[k] != v {
					t.Errorf("param %s = %q, want %q", k, op.Params[k], v)
				}
			}
			if err := op.ValidateRequest(r, []byte(tc.body)); (err == nil) != tc.valid {
				t.Errorf("ValidateRequest: %v, want valid %v", err, tc.valid)
			}
		})
	}
}

func TestCompleteFillsRequiredFields(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/repos/acme/manifests/check-runs/5", nil)
	op, err := Match(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.ValidateRequest(r, nil); err != nil {
		t.Fatal(err)
	}
	// A handler states only what it models; Complete adds the rest so the answer passes the description.
	out, err := op.Complete(http.StatusOK, map[string]any{"id": 5, "name": "stagehand/prod", "head_sha": "abc", "status": "completed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.ValidateResponse(r.Context(), Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: out}); err != nil {
		t.Errorf("completed answer refused: %v", err)
	}
	if err := op.ValidateResponse(r.Context(), Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id": 5}`)}); err == nil {
		t.Error("an incomplete answer passes")
	}
}
