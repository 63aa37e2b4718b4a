package bumpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

// New takes https anywhere and plain http only to this machine: the ID
// token is a credential.
func TestNewRefusesWhereTheTokenWouldLeak(t *testing.T) {
	tests := []struct {
		base, want string
	}{
		{"https://prbot.example.com", ""},
		{"https://prbot.example.com/", ""},
		{"http://localhost:8080", ""},
		{"http://127.0.0.1:8080", ""},
		{"http://[::1]:8080", ""},
		{"http://prbot.example.com", "want https (http only to localhost)"},
		{"http://localhost.example.com", "want https (http only to localhost)"},
		{"ftp://prbot.example.com", "want the URL of prbot serve"},
		{"prbot.example.com", "want the URL of prbot serve"},
		{"", "want the URL of prbot serve"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			c, err := New(tt.base)
			if tt.want == "" {
				if err != nil || !strings.HasSuffix(c.Endpoint(), keyless.BumpsPath) || strings.Contains(c.Endpoint(), "//api") {
					t.Fatalf("New(%q) = %v, %v", tt.base, c, err)
				}
				return
			}
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%q) = %v, want a usage error saying %q", tt.base, err, tt.want)
			}
		})
	}
}

// Bump reads the API's answers into prbot's own types: the result, a
// refusal with its reason (and the result of a pull request opened but not
// merged); a redirect is not followed, an answer past the cap or not JSON
// is an error.
func TestBumpAnswers(t *testing.T) {
	body := keyless.BumpBody{Environment: "devel", Service: "web", Tag: "1.2.3"}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		check   func(*testing.T, *prbot.BumpResult, error)
	}{
		{"accepted", func(w http.ResponseWriter, r *http.Request) {
			var got keyless.BumpBody
			if r.Header.Get("Authorization") != "Bearer id-token" || json.NewDecoder(r.Body).Decode(&got) != nil || got != body {
				http.Error(w, `{"error": "bad request", "reason": "BadRequest"}`, http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(prbot.BumpResult{PR: 7, URL: "https://github.com/acme/manifests/pull/7"})
		}, func(t *testing.T, res *prbot.BumpResult, err error) {
			if err != nil || res.PR != 7 {
				t.Errorf("Bump = %+v, %v; want pull request 7", res, err)
			}
		}},
		{"refused", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error": "acme/checkout-api may bump only checkout-api.json", "reason": "NotOwner"}`)
		}, func(t *testing.T, _ *prbot.BumpResult, err error) {
			var re *RefusedError
			if !errors.As(err, &re) || re.Status != 403 || re.Reason != "NotOwner" || !strings.Contains(err.Error(), "403 NotOwner") {
				t.Errorf("Bump = %v, want a 403 NotOwner refusal", err)
			}
		}},
		{"opened, not merged", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error": "not merged: checks failed", "reason": "NotMerged", "result": {"pr": 9}}`)
		}, func(t *testing.T, _ *prbot.BumpResult, err error) {
			var re *RefusedError
			if !errors.As(err, &re) || re.Result == nil || re.Result.PR != 9 {
				t.Errorf("Bump = %v, want a refusal carrying pull request 9", err)
			}
		}},
		{"redirected", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/steal", http.StatusTemporaryRedirect)
		}, func(t *testing.T, _ *prbot.BumpResult, err error) {
			if err == nil || !strings.Contains(err.Error(), "not followed") {
				t.Errorf("Bump = %v, want the redirect not followed", err)
			}
		}},
		{"huge", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(w, io.LimitReader(spaces{}, 64<<20))
		}, func(t *testing.T, _ *prbot.BumpResult, err error) {
			if err == nil || !strings.Contains(err.Error(), "longer than 1048576 bytes") {
				t.Errorf("Bump = %v, want the answer refused as too long", err)
			}
		}},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "<html>ok</html>")
		}, func(t *testing.T, _ *prbot.BumpResult, err error) {
			if err == nil || !strings.Contains(err.Error(), "decoding the bump's answer") {
				t.Errorf("Bump = %v, want a decoding error", err)
			}
		}},
		{"an error page", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		}, func(t *testing.T, _ *prbot.BumpResult, err error) {
			var re *RefusedError
			if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "502 Bad Gateway") {
				t.Errorf("Bump = %v, want the status, not a refusal", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			c, err := New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Bump(context.Background(), "id-token", body)
			tt.check(t, res, err)
		})
	}
}

type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// IDToken takes the variable named, else asks GitHub Actions' token service
// for the audience, else $STAGEHAND_ID_TOKEN; without any it says how to
// give the job one.
func TestIDToken(t *testing.T) {
	actions := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "bearer request-token" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"count": 1, "value": "gha-%s"}`, r.URL.Query().Get("audience"))
	}))
	t.Cleanup(actions.Close)
	tests := []struct {
		name, tokenEnv string
		env            map[string]string
		want, wantErr  string
		usage          bool
	}{
		{name: "the variable named", tokenEnv: "MY_TOKEN", env: map[string]string{"MY_TOKEN": " tok \n"}, want: "tok"},
		{name: "the variable named is empty", tokenEnv: "MY_TOKEN", env: map[string]string{"STAGEHAND_ID_TOKEN": "x"}, wantErr: "$MY_TOKEN is empty", usage: true},
		{name: "GitHub Actions", env: map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": actions.URL + "/idtoken?api-version=2.0", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-token"}, want: "gha-stagehand"},
		{name: "GitHub Actions refuses", env: map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": actions.URL, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "wrong"}, wantErr: "401 Unauthorized"},
		{name: "GitHub Actions without the request token", env: map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": actions.URL}, wantErr: "ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set", usage: true},
		{name: "STAGEHAND_ID_TOKEN", env: map[string]string{"STAGEHAND_ID_TOKEN": "gl"}, want: "gl"},
		{name: "GitHub Actions without id-token: write", env: map[string]string{"GITHUB_ACTIONS": "true"}, wantErr: "permissions: id-token: write", usage: true},
		{name: "nothing", env: map[string]string{}, wantErr: "no CI ID token", usage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IDToken(context.Background(), func(k string) string { return tt.env[k] }, tt.tokenEnv, "stagehand")
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("IDToken = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var ue *UsageError
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &ue) != tt.usage {
				t.Errorf("IDToken = %q, %v; want an error saying %q (usage: %v)", got, err, tt.wantErr, tt.usage)
			}
		})
	}
}
