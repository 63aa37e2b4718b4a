package login

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// The device flow against githubtest: a code, polls no sooner than the
// interval GitHub gives (and the longer one of a slow_down), and the token
// of the person who entered the code.
func TestDeviceFlow(t *testing.T) {
	gh := githubtest.New(t)
	gh.OAuth().EnableDeviceFlow("Iv1.stagehand", time.Second, time.Second)
	gh.OAuth().ForceSlowDown(1)
	f, err := NewDeviceFlow(gh.RootURL(), "Iv1.stagehand")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.UserCode == "" || c.VerificationURI == "" {
		t.Fatalf("code = %+v", c)
	}
	if err := gh.OAuth().AuthorizeDevice(c.UserCode, "maria"); err != nil {
		t.Fatal(err)
	}
	tok, err := f.Wait(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	total, early := gh.OAuth().DevicePolls()
	if early != 0 || total < 2 {
		t.Errorf("device polls: %d, %d too early; want at least 2 (one slowed down) and none early", total, early)
	}
	req, _ := http.NewRequest("GET", gh.URL()+"/user", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := gh.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /user with the token: %s", resp.Status)
	}
}

// GitHub's refusals end the flow with what the person should know; a
// client GitHub does not know never gets a code; an answer GitHub would not
// give (huge, not JSON) is an error, not a token.
func TestDeviceFlowRefusals(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		start  bool // the refusal comes at Start
		want   error
		msg    string
	}{
		{name: "expired", answer: oauthAnswer(`{"error": "expired_token"}`), want: ErrExpired},
		{name: "denied", answer: oauthAnswer(`{"error": "access_denied"}`), want: ErrDenied},
		{name: "another error", answer: oauthAnswer(`{"error": "unsupported_grant_type", "error_description": "nope"}`), msg: "GitHub answered unsupported_grant_type: nope"},
		{name: "no token", answer: oauthAnswer(`{}`), msg: "without a token"},
		{name: "not JSON", answer: oauthAnswer(`<html>`), msg: "decoding the answer"},
		{name: "huge", answer: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"access_token": "`+strings.Repeat("a", 2<<20)+`"}`)
		}, msg: "longer than 1048576 bytes"},
		{name: "unknown client", start: true, answer: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Not Found", http.StatusNotFound)
		}, msg: "404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/login/device/code" && !tt.start {
					fmt.Fprint(w, `{"device_code": "d", "user_code": "U-1", "verification_uri": "https://github.com/login/device", "interval": 1}`)
					return
				}
				tt.answer(w, r)
			}))
			t.Cleanup(srv.Close)
			f, err := NewDeviceFlow(srv.URL, "Iv1.x")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := f.Start(ctx)
			if err == nil {
				_, err = f.Wait(ctx, c)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)) {
				t.Errorf("error %v, want one saying %q", err, tt.msg)
			}
		})
	}
	for _, tt := range []struct{ url, client string }{{"github.com", "x"}, {"ftp://github.com", "x"}, {"https://github.com", " "}} {
		if _, err := NewDeviceFlow(tt.url, tt.client); err == nil {
			t.Errorf("NewDeviceFlow(%q, %q) accepted", tt.url, tt.client)
		}
	}
}

func oauthAnswer(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }
}

// A saved token is readable by its user only, found again under
// $XDG_CONFIG_HOME, and replaced whole.
func TestSaveToken(t *testing.T) {
	dir := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == "XDG_CONFIG_HOME" {
			return dir, true
		}
		return "", false
	}
	path, err := TokenPath(lookup)
	if err != nil || path != filepath.Join(dir, "stagehand", "token") {
		t.Fatalf("TokenPath = %q, %v", path, err)
	}
	if got := SavedToken(lookup); got != "" {
		t.Errorf("SavedToken before a login = %q", got)
	}
	for _, tok := range []string{"gho_first", "gho_second"} {
		if err := SaveToken(path, tok); err != nil {
			t.Fatal(err)
		}
		if got := SavedToken(lookup); got != tok {
			t.Errorf("SavedToken = %q, want %q", got, tok)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("saved token %v %v, want mode 0600", fi, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}
