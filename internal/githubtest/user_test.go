package githubtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestGetUser: GET /user answers the login of a user token, validated
// against GitHub's description; an installation's token gets 403, a revoked
// token 401.
func TestGetUser(t *testing.T) {
	srv := New(t)
	tok := srv.OAuth().UserToken("alice")
	get := func(tok string) (int, map[string]any) {
		req, _ := http.NewRequest("GET", srv.URL()+"/user", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := get(tok); code != 200 || m["login"] != "alice" {
		t.Errorf("GET /user = %d %v, want alice", code, m)
	}
	if code, _ := get(srv.Token()); code != 403 {
		t.Errorf("GET /user with the static token = %d, want 403", code)
	}
	srv.OAuth().RevokeUserToken(tok)
	if code, _ := get(tok); code != 401 {
		t.Errorf("GET /user with a revoked token = %d, want 401", code)
	}
	if n := srv.CountRequests("GET", "/user"); n != 3 {
		t.Errorf("counted %d GET /user, want 3", n)
	}
}

// TestDeviceFlow: the device flow's answers, including slow_down for a poll
// that comes too soon, and strictness about how the requests are sent.
func TestDeviceFlow(t *testing.T) {
	srv := New(t)
	srv.OAuth().EnableDeviceFlow("Iv1.test", time.Second, time.Second)
	post := func(path string, form url.Values, accept string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.RootURL()+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", accept)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %s", path, b)
		}
		return m
	}
	if m := post("/login/device/code", url.Values{"client_id": {"other"}}, "application/json"); m["error"] != "incorrect_client_credentials" {
		t.Errorf("wrong client id: %v", m)
	}
	code := post("/login/device/code", url.Values{"client_id": {"Iv1.test"}, "scope": {""}}, "application/json")
	dev, _ := code["device_code"].(string)
	if dev == "" || code["interval"] != 1.0 || code["user_code"] == "" {
		t.Fatalf("device code answer %v", code)
	}
	poll := url.Values{"client_id": {"Iv1.test"}, "device_code": {dev}, "grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}
	if m := post("/login/oauth/access_token", poll, "application/json"); m["error"] != "authorization_pending" {
		t.Errorf("first poll: %v", m)
	}
	if m := post("/login/oauth/access_token", poll, "application/json"); m["error"] != "slow_down" || m["interval"] != 2.0 {
		t.Errorf("a poll at once: %v, want slow_down with interval 2", m)
	}
	if err := srv.OAuth().AuthorizeDevice(code["user_code"].(string), "alice"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the interval the server asked for
	m := post("/login/oauth/access_token", poll, "application/json")
	tok, _ := m["access_token"].(string)
	if !strings.HasPrefix(tok, "gho_") || m["token_type"] != "bearer" {
		t.Fatalf("after authorizing: %v", m)
	}
	if total, early := srv.OAuth().DevicePolls(); total != 3 || early != 1 {
		t.Errorf("DevicePolls = %d, %d; want 3, 1", total, early)
	}
	if m := post("/login/oauth/access_token", poll, "application/json"); m["error"] != "incorrect_device_code" {
		t.Errorf("a used device code: %v", m)
	}
	// Asking without Accept: application/json is a client bug GitHub would answer form-encoded.
	req, _ := http.NewRequest("POST", srv.RootURL()+"/login/device/code", strings.NewReader("client_id=Iv1.test"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := srv.TakeViolations(); resp.StatusCode != http.StatusNotAcceptable || len(v) != 1 || !strings.Contains(v[0], "Accept") {
		t.Errorf("without Accept: %d, violations %q", resp.StatusCode, v)
	}
}
