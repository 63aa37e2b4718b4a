package githubtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestWebFlow: authorize redirects back with a code and the state; the code
// buys a user token once, only with the client's secret and redirect URI;
// GET /user answers the login; a person who denies sends an error back.
func TestWebFlow(t *testing.T) {
	srv := New(t)
	srv.OAuth().EnableWebFlow("Iv1.web", "s3cret", "https://stagehand.example.com/")
	srv.OAuth().SignInWeb("maria")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authorize := func(clientID, redirect string) (int, url.Values) {
		t.Helper()
		q := url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st4te"}}
		resp, err := noFollow.Get(srv.RootURL() + "/login/oauth/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return resp.StatusCode, nil
		}
		u, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || !strings.HasPrefix(u.String(), "https://stagehand.example.com/auth/callback") {
			t.Fatalf("redirected to %q", resp.Header.Get("Location"))
		}
		return resp.StatusCode, u.Query()
	}
	exchange := func(form url.Values) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.RootURL()+"/login/oauth/access_token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	const cb = "https://stagehand.example.com/auth/callback"
	if code, _ := authorize("Iv1.other", cb); code != http.StatusNotFound {
		t.Errorf("authorize with an unknown client = %d, want 404", code)
	}
	if code, _ := authorize("Iv1.web", "https://evil.example.com/auth/callback"); code != http.StatusBadRequest {
		t.Errorf("authorize with a foreign redirect URI = %d, want 400", code)
	}
	_, back := authorize("Iv1.web", cb)
	if back.Get("state") != "st4te" || back.Get("code") == "" {
		t.Fatalf("authorize sent back %v, want a code and the state", back)
	}
	form := url.Values{"client_id": {"Iv1.web"}, "client_secret": {"s3cret"}, "code": {back.Get("code")}, "redirect_uri": {cb}}
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"wrong secret", "client_secret", "nope", "incorrect_client_credentials"},
		{"wrong code", "code", "nope", "bad_verification_code"},
		{"other redirect", "redirect_uri", cb + "x", "redirect_uri_mismatch"},
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set(tc.key, tc.value)
		if got := exchange(f); got["error"] != tc.want {
			t.Errorf("%s: %v, want error %s", tc.name, got, tc.want)
		}
	}
	got := exchange(form)
	tok, _ := got["access_token"].(string)
	if !strings.HasPrefix(tok, "ghu_") || got["token_type"] != "bearer" {
		t.Fatalf("exchange = %v", got)
	}
	if again := exchange(form); again["error"] != "bad_verification_code" {
		t.Errorf("a code used twice: %v", again)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/user", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&u)
	resp.Body.Close()
	if u["login"] != "maria" {
		t.Errorf("GET /user with the web-flow token = %v, want maria", u)
	}
	if srv.OAuth().CodesExchanged() != 1 {
		t.Errorf("codes exchanged %d, want 1", srv.OAuth().CodesExchanged())
	}
	srv.OAuth().SignInWeb("")
	if _, back := authorize("Iv1.web", cb); back.Get("error") != "access_denied" || back.Get("state") != "st4te" || back.Has("code") {
		t.Errorf("a denial sent back %v", back)
	}
}
