package ui

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// isHostCookie reports whether the Set-Cookie line raw sets (or clears)
// cookie name as a __Host- cookie: Secure, Path=/, no Domain, and as the
// page's cookies are besides, HttpOnly and SameSite=Lax.
func isHostCookie(raw, name string) bool {
	c, err := http.ParseSetCookie(raw)
	return err == nil && c.Name == name && strings.HasPrefix(name, "__Host-") &&
		c.Secure && c.Path == "/" && c.Domain == "" && !strings.Contains(strings.ToLower(raw), "domain=") &&
		c.HttpOnly && c.SameSite == http.SameSiteLaxMode
}

// setCookies returns h's Set-Cookie lines by cookie name.
func setCookies(h http.Header) map[string]string {
	out := map[string]string{}
	for _, raw := range h.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(raw); err == nil {
			out[c.Name] = raw
		}
	}
	return out
}

// TestCookieNamesAndAttributes: every cookie the page sets or clears is a
// __Host- cookie (Secure, Path=/, no Domain), over TLS and on the loopback
// demo login over plain HTTP alike; a sign-in over plain HTTP to another
// host, whose cookie a browser would drop, is refused with the reason.
func TestCookieNamesAndAttributes(t *testing.T) {
	demo, err := New(newBackend(t), WithDemoLogin("demo"))
	if err != nil {
		t.Fatal(err)
	}
	gh, err := New(newBackend(t), WithOAuth(OAuth{ClientID: "Iv1.x", ClientSecret: "s", WebURL: "https://github.example", APIURL: "https://github.example/api/v3"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		s          *Server
		method     string
		path, host string
		tls        bool
		want       int
		cookie     string // the cookie set; "" for none
	}{
		{name: "demo sign-in over plain HTTP to 127.0.0.1", s: demo, method: http.MethodPost, path: "/signin/demo", host: "127.0.0.1:8080",
			want: http.StatusSeeOther, cookie: sessionCookie},
		{name: "demo sign-in over plain HTTP to localhost", s: demo, method: http.MethodPost, path: "/signin/demo", host: "localhost:8080",
			want: http.StatusSeeOther, cookie: sessionCookie},
		{name: "demo sign-in behind TLS", s: demo, method: http.MethodPost, path: "/signin/demo", host: "stagehand.example.com", tls: true,
			want: http.StatusSeeOther, cookie: sessionCookie},
		{name: "demo sign-in over plain HTTP to a host name", s: demo, method: http.MethodPost, path: "/signin/demo", host: "stagehand.example.com",
			want: http.StatusBadRequest},
		{name: "GitHub sign-in behind TLS", s: gh, method: http.MethodGet, path: "/auth/github", host: "stagehand.example.com", tls: true,
			want: http.StatusFound, cookie: stateCookie},
		{name: "GitHub sign-in over plain HTTP to a host name", s: gh, method: http.MethodGet, path: "/auth/github", host: "stagehand.example.com",
			want: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(tc.method, tc.path)
			req.Host = tc.host
			if tc.tls {
				req.Header.Set("X-Forwarded-Proto", "https")
			}
			rec := record(tc.s, req)
			if rec.Code != tc.want {
				t.Fatalf("%s %s on %s = %d, want %d: %s", tc.method, tc.path, tc.host, rec.Code, tc.want, rec.Body)
			}
			got := setCookies(rec.Header())
			if tc.cookie == "" {
				if len(got) != 0 {
					t.Errorf("cookies set although refused: %v", got)
				}
				if !strings.Contains(rec.Body.String(), "signing in needs HTTPS") {
					t.Errorf("the refusal does not say why:\n%s", rec.Body)
				}
				return
			}
			if raw, ok := got[tc.cookie]; !ok || !isHostCookie(raw, tc.cookie) {
				t.Errorf("Set-Cookie %v: want %s as a __Host- cookie (Secure, Path=/, no Domain), HttpOnly, SameSite=Lax", got, tc.cookie)
			}
		})
	}

	// The flash message and signing out (a removal a browser only obeys with the same attributes).
	br := signedIn(t, serve(t, newBackend(t), WithDemoLogin("demo")))
	csrf := br.csrf("/locks")
	_, h, _ := br.post("/locks", url.Values{"path": {"Apps/Prod!"}, "type": {"deploy"}, "duration": {"1h"}, "csrf": {csrf}})
	if raw := setCookies(h)[flashCookie]; !isHostCookie(raw, flashCookie) {
		t.Errorf("flash cookie %q: want a __Host- cookie", raw)
	}
	_, h, _ = br.post("/signout", url.Values{"csrf": {csrf}})
	raw := setCookies(h)[sessionCookie]
	if c, err := http.ParseSetCookie(raw); err != nil || c.MaxAge >= 0 || !isHostCookie(raw, sessionCookie) {
		t.Errorf("signing out sets %q: want the session cookie removed with its __Host- attributes", raw)
	}
	if code, _ := br.get("/"); code != http.StatusUnauthorized {
		t.Errorf("GET / after signing out = %d, want 401", code)
	}
}

// TestOldCookieNameSignsNobodyIn: only the __Host- cookie is read; the same
// sealed value under the name without the prefix (which a sibling host or a
// plain-HTTP answer could set) signs nobody in.
func TestOldCookieNameSignsNobodyIn(t *testing.T) {
	s, err := New(newBackend(t), WithDemoLogin("demo"))
	if err != nil {
		t.Fatal(err)
	}
	val, err := s.cookies.seal.seal("stagehand_session", session{Login: "demo", CSRF: "x", Expires: s.o.now().Add(sessionTTL).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	good, err := s.cookies.seal.seal(sessionCookie, session{Login: "demo", CSRF: "x", Expires: s.o.now().Add(sessionTTL).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, value string
		want        int
	}{
		{"stagehand_session", val, http.StatusUnauthorized},
		{"stagehand_session", good, http.StatusUnauthorized},
		{sessionCookie, good, http.StatusOK},
	} {
		req := newRequest(http.MethodGet, "/")
		req.AddCookie(&http.Cookie{Name: tc.name, Value: tc.value})
		if got := record(s, req).Code; got != tc.want {
			t.Errorf("GET / with a %s cookie = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestKeepsCookies: the hosts a browser keeps Secure cookies from over
// plain HTTP are the loopback ones.
func TestKeepsCookies(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"127.0.0.2", true}, {"[::1]:8080", true}, {"localhost", true}, {"LOCALHOST.:80", true},
		{"app.localhost:3000", true},
		{"stagehand.example.com", false}, {"localhost.example.com", false}, {"127.0.0.1.nip.io", false},
		{"10.0.0.1:8080", false}, {"", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			req := newRequest(http.MethodGet, "/")
			req.Host = tc.host
			if got := keepsCookies(req); got != tc.want {
				t.Errorf("keepsCookies(Host %q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}
