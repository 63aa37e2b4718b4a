package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestSignedOut: nobody signed in sees the sign-in page and nothing of the
// environments, on every page that shows them, and cannot decide.
func TestSignedOut(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"))
	br := newBrowser(t, base)
	for _, p := range []string{"/", "/environments/prod", "/search?q=checkout-api", "/locks", "/events"} {
		code, body := br.get(p)
		if code != http.StatusUnauthorized || strings.Contains(body, "checkout-api") || !strings.Contains(body, "Sign in as demo") {
			t.Errorf("GET %s signed out = %d, want 401 with the sign-in page and no service names:\n%s", p, code, body)
		}
	}
	if code, _, _ := br.post("/environments/prod/approve", url.Values{"planHash": {"sha256:plan1"}, "csrf": {"x"}}); code != http.StatusForbidden {
		t.Errorf("approve signed out = %d, want 403", code)
	}
	if got := b.decisions(); len(got) != 0 {
		t.Errorf("decided while signed out: %v", got)
	}
}

// TestOverview: the matrix has a column per environment and a cell per
// service, with state in words and symbols, pending approval in the head.
func TestOverview(t *testing.T) {
	base := serve(t, newBackend(t), WithDemoLogin("demo"))
	br := signedIn(t, base)
	code, body := br.get("/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d %s", code, body)
	}
	for _, want := range []string{
		`<th scope="col" data-env="prod">`, `<th scope="col" data-env="staging">`,
		`data-env="prod" data-state="pending"`, `◔</span> pending`, `eu: 1.4.1 → 1.4.2`,
		`data-env="staging" data-state="in sync"`, `approval pending`, `demo`,
		`<a href="/environments/prod">prod</a> <span class="phase" data-phase="AwaitingApproval"`,
		`<a href="/environments/staging">staging</a> <span class="phase" data-phase="Idle"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q:\n%s", want, body)
		}
	}
}

// TestEnvironmentPage: plan table, history, layout tree, and Approve
// which records the signed-in login; a stale plan hash is refused.
func TestEnvironmentPage(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"), WithCommitURL("https://github.example/acme/manifests/commit/{revision}"))
	br := signedIn(t, base)
	code, body := br.get("/environments/prod")
	if code != http.StatusOK {
		t.Fatalf("GET /environments/prod = %d %s", code, body)
	}
	for _, want := range []string{"1.4.1</span> → <span", "1.4.2</span>", "sha256:abababababab…", "Deployment/checkout-api",
		`id="approve"`, "environments/prod/checkout-api.json", "line 3", "by carol", "took 1m30s",
		"<strong>Break-glass</strong> by github:alice: INC-42: &lt;payments&gt; down (through the closed deploy windows",
		`href="https://github.example/acme/manifests/commit/abc123"`,
		`<h1>prod <span class="phase" data-phase="AwaitingApproval" title="Lifecycle phase">AwaitingApproval</span></h1>`} {
		if !strings.Contains(body, want) {
			t.Errorf("environment page lacks %q", want)
		}
	}
	csrf := br.csrf("/environments/prod")
	for _, tc := range []struct {
		name  string
		form  url.Values
		code  int
		flash string
	}{
		{"no CSRF token", url.Values{"planHash": {"sha256:plan1"}}, http.StatusForbidden, "CSRF"},
		{"wrong CSRF token", url.Values{"planHash": {"sha256:plan1"}, "csrf": {"forged"}}, http.StatusForbidden, "CSRF"},
		{"stale plan", url.Values{"planHash": {"sha256:other"}, "csrf": {csrf}}, http.StatusSeeOther, "no longer the one pending"},
		{"approve", url.Values{"planHash": {"sha256:plan1"}, "csrf": {csrf}}, http.StatusSeeOther, "Approved by demo: applying revision c0ffee000000 to prod."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := br.post("/environments/prod/approve", tc.form)
			if code != tc.code {
				t.Fatalf("POST approve = %d, want %d: %s", code, tc.code, body)
			}
			if code == http.StatusSeeOther {
				_, body = br.get("/environments/prod")
			}
			if !strings.Contains(body, tc.flash) {
				t.Errorf("after POST approve the page lacks %q:\n%s", tc.flash, body)
			}
		})
	}
	if diff := cmp.Diff([]string{"approve prod by github:demo"}, b.decisions()); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// TestReadOnly: a login the policy lets read sees no buttons, and a forged
// post with its own CSRF token is refused.
func TestReadOnly(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"), WithPolicy(func(_ context.Context, login, _ string) (Access, error) {
		return Access{Read: true, Why: login + " has read on acme/manifests"}, nil
	}))
	br := signedIn(t, base)
	_, body := br.get("/environments/prod")
	if strings.Contains(body, `id="approve"`) || !strings.Contains(body, "has read on acme/manifests") {
		t.Errorf("read-only page shows Approve or lacks the reason:\n%s", body)
	}
	csrf := br.csrf("/environments/prod")
	if code, _, _ := br.post("/environments/prod/approve", url.Values{"planHash": {"sha256:plan1"}, "csrf": {csrf}}); code != http.StatusForbidden {
		t.Errorf("read-only approve = %d, want 403", code)
	}
	if code, _, _ := br.post("/locks", url.Values{"path": {"apps/prod"}, "type": {"deploy"}, "duration": {"1h"}, "csrf": {csrf}}); code != http.StatusForbidden {
		t.Errorf("read-only lock = %d, want 403", code)
	}
	if got := b.decisions(); len(got) != 0 {
		t.Errorf("read-only decided %v", got)
	}
}

// TestDemoLoginOnlyOnLoopback: the demo sign-in is refused to a client that
// is not on this machine, or that a proxy forwards.
func TestDemoLoginOnlyOnLoopback(t *testing.T) {
	s, err := New(newBackend(t), WithDemoLogin("demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote, forwarded string
		want                    int
	}{
		{"loopback", "127.0.0.1:5555", "", http.StatusSeeOther},
		{"loopback v6", "[::1]:5555", "", http.StatusSeeOther},
		{"remote", "203.0.113.9:5555", "", http.StatusForbidden},
		{"forwarded by a local proxy", "127.0.0.1:5555", "203.0.113.9", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(http.MethodPost, "/signin/demo")
			req.RemoteAddr = tc.remote
			if tc.forwarded != "" {
				req.Header.Set("X-Forwarded-For", tc.forwarded)
			}
			rec := record(s, req)
			if rec.Code != tc.want {
				t.Errorf("POST /signin/demo from %s = %d, want %d", tc.remote, rec.Code, tc.want)
			}
			if c := rec.Header().Get("Set-Cookie"); tc.want == http.StatusSeeOther && !isHostCookie(c, sessionCookie) {
				t.Errorf("session cookie %q over plain HTTP to loopback: want a __Host- cookie (Secure, Path=/, no Domain), HttpOnly, SameSite=Lax", c)
			}
		})
	}
}

// TestCookies: a cookie is Secure behind TLS, and a tampered or foreign
// cookie signs nobody in.
func TestCookies(t *testing.T) {
	s, err := New(newBackend(t), WithDemoLogin("demo"), WithSessionKey([]byte(strings.Repeat("k", 32))))
	if err != nil {
		t.Fatal(err)
	}
	req := newRequest(http.MethodPost, "/signin/demo")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Del("X-Forwarded-For")
	rec := record(s, req)
	cookie := rec.Result().Cookies()
	if len(cookie) != 1 || !cookie[0].Secure || !cookie[0].HttpOnly || cookie[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("cookies behind TLS: %+v", cookie)
	}
	other, err := New(newBackend(t), WithSessionKey([]byte(strings.Repeat("o", 32))))
	if err != nil {
		t.Fatal(err)
	}
	v := cookie[0].Value
	tampered := v[:len(v)-2] + "AA"
	for _, tc := range []struct {
		name  string
		s     *Server
		value string
		want  int
	}{
		{"own key", s, v, http.StatusOK},
		{"tampered", s, tampered, http.StatusUnauthorized},
		{"another key", other, v, http.StatusUnauthorized},
		{"garbage", s, "%%%", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(http.MethodGet, "/")
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: tc.value})
			if got := record(tc.s, req).Code; got != tc.want {
				t.Errorf("GET / with the cookie = %d, want %d", got, tc.want)
			}
		})
	}
	if _, err := New(newBackend(t), WithSessionKey([]byte("short"))); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("New with a short key = %v", err)
	}
}

// TestSearch finds a service by name, by version and by digest prefix.
func TestSearch(t *testing.T) {
	base := serve(t, newBackend(t), WithDemoLogin("demo"))
	br := signedIn(t, base)
	for _, tc := range []struct{ q, want string }{
		{"checkout-api", "2 places"},
		{"1.4.1", "1 place for"},
		{"abababab", "1 place for"},
		{"nothing-here", "Nothing matches"},
	} {
		t.Run(tc.q, func(t *testing.T) {
			code, body := br.get("/search?q=" + url.QueryEscape(tc.q))
			if code != http.StatusOK || !strings.Contains(body, tc.want) {
				t.Errorf("search %q = %d, want %q in:\n%s", tc.q, code, tc.want, body)
			}
		})
	}
}

// TestLocks takes, extends and removes a lock with the seed's messages,
// as the signed-in login.
func TestLocks(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"))
	br := signedIn(t, base)
	csrf := br.csrf("/locks")
	step := func(path string, form url.Values, want string) {
		t.Helper()
		form.Set("csrf", csrf)
		if code, _, body := br.post(path, form); code != http.StatusSeeOther {
			t.Fatalf("POST %s = %d %s", path, code, body)
		}
		if _, body := br.get("/locks"); !strings.Contains(body, want) {
			t.Errorf("after POST %s %v the page lacks %q:\n%s", path, form, want, body)
		}
	}
	step("/locks", url.Values{"path": {"apps/prod"}, "type": {"deploy"}, "duration": {"2h"}, "reason": {"Black Friday"}},
		"Locked apps/prod for a deploy until Tue 24 Nov, 11:00.")
	l, err := b.locks.Get(context.Background(), "apps/prod")
	if err != nil || l.Author != "github:demo" || l.Links["reason"] != "Black Friday" {
		t.Errorf("stored lock %+v, %v: want author github:demo and the reason", l, err)
	}
	step("/locks", url.Values{"path": {"apps/prod/eu"}, "type": {"deploy"}, "duration": {"1h"}}, "Not locked: apps/prod is locked until")
	step("/locks", url.Values{"path": {"Apps/Prod!"}, "type": {"deploy"}, "duration": {"1h"}}, "Nothing was changed: invalid lock path")
	step("/locks", url.Values{"path": {"apps/qa"}, "type": {"deploy"}, "duration": {"1h"}, "until": {"2026-12-31 12:00"}}, "not both")
	step("/locks/extend", url.Values{"path": {"apps/prod"}, "type": {"deploy"}, "duration": {"1h"}}, "Extended the lock on apps/prod (a deploy) until Tue 24 Nov, 12:00.")
	step("/locks/unlock", url.Values{"path": {"apps/prod"}, "type": {"incident"}}, "Not unlocked:")
	// Another person's lock is theirs: the page neither removes nor extends it.
	if _, err := b.locks.Lock(context.Background(), lock.Lock{Path: "apps/qa", Type: lock.Deploy, Author: "alice",
		ExpiresAt: b.locks.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	step("/locks/unlock", url.Values{"path": {"apps/qa"}, "type": {"deploy"}}, "Not unlocked:")
	step("/locks/extend", url.Values{"path": {"apps/qa"}, "type": {"deploy"}, "duration": {"1h"}}, "Not extended: alice&#39;s lock on apps/qa belongs to them")
	if l, err := b.locks.Get(context.Background(), "apps/qa"); err != nil || l.Author != "alice" {
		t.Errorf("alice's lock after another's unlock: %+v, %v", l, err)
	}
	if _, err := b.locks.Unlock(context.Background(), "apps/qa", lock.Deploy, false); err != nil {
		t.Fatal(err)
	}
	step("/locks/unlock", url.Values{"path": {"apps/prod"}, "type": {"deploy"}}, "Unlocked apps/prod (a deploy).")
	if _, body := br.get("/locks"); !strings.Contains(body, "Nothing is locked.") {
		t.Errorf("after unlock:\n%s", body)
	}
}

// TestEvents: a change of an environment's state reaches an open event
// stream; the time the leader last looked alone does not.
func TestEvents(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"), WithPollInterval(20*time.Millisecond))
	br := signedIn(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	resp, err := br.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET /events = %d %s", resp.StatusCode, ct)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// "ready" comes once the reader has its first fingerprints: changes from then on are announced.
	for line := range lines {
		if line == "event: ready" {
			break
		}
	}
	b.set("staging", func(e *status.Environment) { e.ObservedAt = t0.Add(time.Minute) })
	time.Sleep(100 * time.Millisecond)
	b.set("prod", func(e *status.Environment) { e.Pending = nil })
	for line := range lines {
		if strings.HasPrefix(line, "data: ") && line != "data: {}" { // {}: the ready event's
			if line != `data: {"environment":"prod"}` {
				t.Errorf("first event after ready %q, want prod's", line)
			}
			return
		}
	}
	t.Fatal("the stream ended without an event")
}

// TestPolicyPerEnvironment: approving in one environment does not let one
// approve, or lock, in another.
func TestPolicyPerEnvironment(t *testing.T) {
	b := newBackend(t)
	base := serve(t, b, WithDemoLogin("demo"), WithPolicy(func(_ context.Context, _, env string) (Access, error) {
		if env == "prod" {
			return Access{Read: true, Why: "prod needs maintain on acme/manifests"}, nil
		}
		return Access{Read: true, Approve: true, Why: "write on acme/manifests"}, nil
	}))
	br := signedIn(t, base)
	if _, body := br.get("/environments/prod"); strings.Contains(body, `id="approve"`) || !strings.Contains(body, "prod needs maintain") {
		t.Errorf("prod page offers Approve to a non-approver of prod")
	}
	csrf := br.csrf("/locks")
	if code, _, body := br.post("/environments/prod/approve", url.Values{"planHash": {"sha256:plan1"}, "csrf": {csrf}}); code != http.StatusForbidden || !strings.Contains(body, "may read but not approve or lock in prod") {
		t.Errorf("approve in prod = %d %s", code, body)
	}
	if code, _, _ := br.post("/locks", url.Values{"path": {"apps/prod/eu"}, "type": {"deploy"}, "duration": {"1h"}, "csrf": {csrf}}); code != http.StatusForbidden {
		t.Errorf("lock beneath prod's lock path = %d, want 403", code)
	}
	if code, _, _ := br.post("/locks", url.Values{"path": {"apps/staging"}, "type": {"deploy"}, "duration": {"1h"}, "csrf": {csrf}}); code != http.StatusSeeOther {
		t.Errorf("lock staging = %d, want 303", code)
	}
	if got := b.decisions(); len(got) != 0 {
		t.Errorf("decided %v", got)
	}
}

// TestTwoApprovals: with approvals.required 2 the page shows the tally, the
// first approver sees their approval counted and no second button, and an
// author of the change is refused with the policy's reason.
func TestTwoApprovals(t *testing.T) {
	b := newBackend(t)
	b.set("prod", func(e *status.Environment) { e.Pending.Required = 2 })
	for _, login := range []string{"demo", "author"} {
		t.Run(login, func(t *testing.T) {
			s, err := New(b, WithDemoLogin(login), WithClock(func() time.Time { return t0 }, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s)
			defer srv.Close()
			br := signedIn(t, srv.URL)
			_, body := br.get("/environments/prod")
			if login == "demo" && (!strings.Contains(body, "0 of 2 approvals") || !strings.Contains(body, "Approve (1 of 2)")) {
				t.Errorf("before approving: no tally or no 'Approve (1 of 2)':\n%s", body)
			}
			csrf := br.csrf("/environments/prod")
			if code, _, _ := br.post("/environments/prod/approve", url.Values{"planHash": {"sha256:plan1"}, "csrf": {csrf}}); code != http.StatusSeeOther {
				t.Fatalf("approve = %d", code)
			}
			_, body = br.get("/environments/prod")
			want := []string{"Approved by demo: 1 of 2 approvals: github:demo; revision c0ffee000000 waits for more approvals in prod.",
				"You approved this plan; it waits for 1 more."}
			if login == "author" {
				want = []string{"Not approved: github:author may not approve this plan of environment prod: author wrote c0ffee000000", "1 of 2 approvals: github:demo"}
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("after approving as %s the page lacks %q", login, w)
				}
			}
			if login == "demo" && strings.Contains(body, `id="approve"`) {
				t.Error("the page offers demo a second approval")
			}
		})
	}
	if _, body := signedInOverview(t, b); !strings.Contains(body, "approval pending (1 of 2)") {
		t.Errorf("overview lacks the tally:\n%s", body)
	}
}

func signedInOverview(t *testing.T, b Backend) (int, string) {
	t.Helper()
	return signedIn(t, serve(t, b, WithDemoLogin("demo"))).get("/")
}

// TestResolveError: an environment that cannot be resolved says why, naming
// the file and line, on its page and in the overview's head.
func TestResolveError(t *testing.T) {
	b := newBackend(t)
	const msg = `resolving manifest at c0ffee000000: environments/staging/manifest.json:3:15: /includes/0: include "web.json": file does not exist`
	b.set("staging", func(e *status.Environment) { e.Error = msg })
	br := signedIn(t, serve(t, b, WithDemoLogin("demo")))
	if _, body := br.get("/environments/staging"); !strings.Contains(body, `id="resolve-error"`) || !strings.Contains(body, "environments/staging/manifest.json:3:15") {
		t.Errorf("staging's page lacks the resolve error:\n%s", body)
	}
	if _, body := br.get("/"); !strings.Contains(body, "cannot resolve") || !strings.Contains(body, "manifest.json:3:15") {
		t.Errorf("the overview's head lacks the resolve error")
	}
}

// TestHoldShown: a rollback hold is listed with the locks, in words.
func TestHoldShown(t *testing.T) {
	b := newBackend(t)
	if _, err := b.locks.Lock(context.Background(), lock.Lock{Path: "apps/prod/hold", Type: lock.Hold, Author: "carol",
		ExpiresAt: t0.Add(time.Hour), Links: map[string]string{"reason": "rolled back 1.4.2"}}); err != nil {
		t.Fatal(err)
	}
	br := signedIn(t, serve(t, b, WithDemoLogin("demo")))
	if _, body := br.get("/locks"); !strings.Contains(body, "apps/prod/hold") || !strings.Contains(body, lock.Hold.Friendly()) || !strings.Contains(body, "rolled back 1.4.2") {
		t.Errorf("the locks page lacks the hold:\n%s", body)
	}
}

// TestReleasePending: a plan deployed and waiting for its release approval
// (an approval after the deployment in its sequence) says so and offers to
// release it; approving says it is released. As in the daemon's state, the
// apply is still in flight on the same planHash: the page shows the
// decision, not a rollout under way.
func TestReleasePending(t *testing.T) {
	b := newBackend(t)
	e := b.envs["prod"]
	e.Pending.Release = true
	e.InFlight = &approval.InFlight{Revision: e.Pending.Revision, PlanHash: e.Pending.PlanHash, Approver: approval.AutoApprover,
		Changes: json.RawMessage(`[]`), Started: e.Pending.ProposedAt}
	base := serve(t, b, WithDemoLogin("demo"))
	br := signedIn(t, base)
	_, body := br.get("/environments/prod")
	for _, want := range []string{"Deployed and verified; waiting for its release approval.", "Approve and release", `id="reject"`} {
		if !strings.Contains(body, want) {
			t.Errorf("environment page lacks %q", want)
		}
	}
	if strings.Contains(body, "Rolling out") {
		t.Errorf("environment page shows the release wait as rolling out:\n%s", body)
	}
	csrf := br.csrf("/environments/prod")
	if code, _, body := br.post("/environments/prod/approve", url.Values{"planHash": {"sha256:plan1"}, "csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("POST approve = %d: %s", code, body)
	}
	if _, body = br.get("/environments/prod"); !strings.Contains(body, "Approved by demo: releasing revision c0ffee000000 in prod.") {
		t.Errorf("after approving the release the page lacks the flash:\n%s", body)
	}
}

// TestSignInRefusesReservedLogins: a login spelled like a name Stagehand uses for itself gets no session
// (403 naming the rule), so nothing it locks or decides on the page could be read as Stagehand's own.
func TestSignInRefusesReservedLogins(t *testing.T) {
	for _, login := range []string{"stagehand", "Stagehand-Reconciler", "rollback", "skipConfirmation", "api-token"} {
		t.Run(login, func(t *testing.T) {
			s, err := New(newBackend(t), WithDemoLogin(login))
			if err != nil {
				t.Fatal(err)
			}
			req := newRequest(http.MethodPost, "/signin/demo")
			req.RemoteAddr = "127.0.0.1:5555"
			rec := record(s, req)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "Stagehand uses the names") {
				t.Errorf("POST /signin/demo as %s = %d %q, want 403 naming the rule", login, rec.Code, rec.Body.String())
			}
			if c := rec.Header().Get("Set-Cookie"); strings.Contains(c, sessionCookie) {
				t.Errorf("a session cookie was set for %s: %q", login, c)
			}
		})
	}
}

// TestRulesAndWaitingShown: the overview's head of an environment and its page show the messages of the
// approval rules that apply to the pending plan and what the environment waits for (its deploy window).
func TestRulesAndWaitingShown(t *testing.T) {
	const rule = "checkout-api changes need 2 approvers from acme/payments"
	const window = "waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"
	b := newBackend(t)
	prod := *b.envs["prod"]
	pending := *prod.Pending
	pending.Required, pending.Reasons = 2, []string{rule}
	prod.Pending, prod.Waiting = &pending, []string{window}
	b.envs["prod"] = &prod
	base := serve(t, b, WithDemoLogin("demo"))
	br := signedIn(t, base)
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{`approval pending (0 of 2)</a><span class="rule">` + rule + `</span>`, `<span aria-hidden="true">⏸</span> ` + window}},
		{"/environments/prod", []string{`<li>Approval rule: ` + rule + `</li>`, `<strong>0 of 2 approvals (` + rule + `)</strong>`,
			`<p class="flash warn waiting"><span aria-hidden="true">⏸</span> ` + window + `</p>`}},
	} {
		code, body := br.get(tc.path)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", tc.path, code, body)
		}
		for _, want := range tc.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", tc.path, want, body)
			}
		}
	}
}
