package ui

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// formRoutes are the page's form posts.
var formRoutes = []string{"/environments/prod/approve", "/environments/prod/reject", "/environments/nowhere/approve",
	"/locks", "/locks/extend", "/locks/unlock", "/signout"}

// FuzzForm posts arbitrary bodies to every form of the page as a signed-in
// reader, with or without the session's CSRF token appended: the answer is a
// redirect or a refusal page, never a 5xx or a panic; without the token it
// is a refusal and nothing is decided, locked or signed out; and no cookie set is larger than a browser
// keeps (4096 bytes), so a refusal's message is not silently lost.
func FuzzForm(f *testing.F) {
	f.Add(uint8(0), []byte("planHash=sha256:plan1"), true)
	f.Add(uint8(0), []byte("planHash=sha256:plan1"), false)
	f.Add(uint8(1), []byte("planHash=sha256:plan1&reason="+strings.Repeat("x", 5000)), true)
	f.Add(uint8(1), []byte("planHash=sha256:old&reason=%00%ff"), true)
	f.Add(uint8(2), []byte("planHash=sha256:plan1"), true)
	f.Add(uint8(3), []byte("path=apps/prod&type=deploy&duration=2h&reason=release&link=https://example.com"), true)
	f.Add(uint8(3), []byte("path=apps/../prod&type=deploy&duration=2h"), true)
	f.Add(uint8(3), []byte("path="+strings.Repeat("a/", 3000)+"&type=deploy&duration=2h"), true)
	f.Add(uint8(3), []byte("path=apps/prod&type=deploy&until=2026-12-31 12:00&link=javascript:alert(1)"), true)
	f.Add(uint8(4), []byte("path=apps/prod&type=deploy&duration=9999999h"), true)
	f.Add(uint8(5), []byte("path=apps/prod&type=nuke"), true)
	f.Add(uint8(6), []byte("csrf=forged"), false)
	f.Add(uint8(3), []byte("path=%zz&type=;;;&&&"), true)
	f.Add(uint8(3), []byte(strings.Repeat("a=b&", 5000)), true)
	b := newBackend(f)
	s, err := New(b, WithDemoLogin("demo"), WithClock(func() time.Time { return t0 }, time.UTC), WithPollInterval(time.Hour), WithRateLimit(0, 0))
	if err != nil {
		f.Fatal(err)
	}
	signin := record(s, newRequest(http.MethodPost, "/signin/demo"))
	cookies := signin.Result().Cookies()
	if len(cookies) != 1 {
		f.Fatalf("demo sign-in set %d cookies", len(cookies))
	}
	req := newRequest(http.MethodGet, "/")
	req.AddCookie(cookies[0])
	csrf := s.cookies.session(req).CSRF
	f.Fuzz(func(t *testing.T, route uint8, body []byte, withCSRF bool) {
		form := string(body)
		if withCSRF {
			form += "&csrf=" + url.QueryEscape(csrf)
		}
		decided, locked := len(b.decisions()), countLocks(t, b)
		req := newRequest(http.MethodPost, formRoutes[int(route)%len(formRoutes)])
		req.Body = http.NoBody
		req.Body = readCloser{strings.NewReader(form)}
		req.ContentLength = int64(len(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookies[0])
		rec := record(s, req)
		switch rec.Code {
		case http.StatusSeeOther, http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
		default:
			t.Fatalf("POST %s %q: %d\n%s", req.URL.Path, form, rec.Code, rec.Body)
		}
		if !withCSRF && !strings.Contains(form, "csrf="+url.QueryEscape(csrf)) {
			// 403, or 400 for a form that does not parse at all (read before its token can be).
			refused := rec.Code == http.StatusForbidden || rec.Code == http.StatusBadRequest && strings.Contains(rec.Body.String(), "Reading the form failed")
			if !refused || len(b.decisions()) != decided || countLocks(t, b) != locked {
				t.Fatalf("POST %s without the CSRF token %q: %d, decisions %d → %d, locks %d → %d", req.URL.Path, form, rec.Code, decided, len(b.decisions()), locked, countLocks(t, b))
			}
		}
		for _, c := range rec.Result().Cookies() {
			if n := len(c.String()); n > 4096 {
				t.Fatalf("POST %s %q set cookie %s of %d bytes: browsers drop it", req.URL.Path, form, c.Name, n)
			}
		}
	})
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

func countLocks(t *testing.T, b *backend) int {
	ls, err := b.locks.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(ls)
}

// TestLongFlashFitsACookie: a refusal quoting a long form value is
// shortened to fit the cookie a browser keeps, and shown on the next page.
func TestLongFlashFitsACookie(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"))
	br := signedIn(t, base)
	tok := br.csrf("/locks")
	code, h, _ := br.post("/locks", url.Values{"path": {strings.Repeat("äb/", 1500)}, "type": {"deploy"}, "duration": {"2h"}, "csrf": {tok}})
	if code != http.StatusSeeOther {
		t.Fatalf("POST /locks = %d", code)
	}
	var flash string
	for _, c := range h.Values("Set-Cookie") {
		if strings.HasPrefix(c, flashCookie+"=") {
			flash = c
		}
	}
	if flash == "" || len(flash) > 4096 {
		t.Fatalf("flash cookie of %d bytes, want one of at most 4096", len(flash))
	}
	_, body := br.get("/locks")
	if !strings.Contains(body, "Nothing was changed: ") || !strings.Contains(body, "äb/äb/äb/") || !strings.Contains(body, "…") {
		t.Errorf("the next page does not show the shortened message:\n%s", body)
	}
}
