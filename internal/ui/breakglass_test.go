package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// glassBackend is backend with break-glass (approval.BreakGlasser), as the daemon's answers it: only the
// plan waiting (pending, or deferred without a pending record), only while the windows are closed.
type glassBackend struct {
	*backend
	mu    sync.Mutex
	glass []string
}

func (b *glassBackend) BreakGlass(_ context.Context, env, hash string, why approval.Why) (*approval.Pending, error) {
	who, reason := why.By, why.Reason
	e, err := b.Environment(context.Background(), env)
	if err != nil {
		return nil, err
	}
	if e.Windows == nil || e.Windows.Open {
		return nil, &approval.RefusedError{Environment: env, Approver: who.String(), Reason: "the deploy windows of " + env + " are open now"}
	}
	if h, _, ok := glassPlan(e); !ok || h != hash {
		return nil, &approval.NotPendingError{Environment: env, PlanHash: hash, Pending: e.Pending}
	}
	b.mu.Lock()
	b.glass = append(b.glass, env+" "+hash+" "+who.String()+": "+reason)
	b.mu.Unlock()
	if e.Pending != nil {
		return e.Pending, nil
	}
	return &approval.Pending{PlanHash: hash, Revision: e.Revision, Approvals: []approval.Approval{{Approver: approval.AutoApprover}}}, nil
}

func (b *glassBackend) broken() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.glass...)
}

// closed is the windows' explanation of a freeze.
func closed() *policy.Explanation {
	return &policy.Explanation{Why: "inside the deny window year-end", Opens: t0.Add(72 * time.Hour)}
}

// glassRule lets alice and demo break the glass in prod only.
func glassRule(_ context.Context, login, env string) (bool, string, error) {
	if env == "prod" && (login == "demo" || login == "alice") {
		return true, "", nil
	}
	return false, "breaking the glass in " + env + " needs one of lock:admin, approve:" + env, nil
}

// TestBreakGlassForm: while prod's windows are closed, the environment page offers a break-glass of the
// plan waiting to whom the rule allows, with a required reason; the form goes through the backend's
// BreakGlass as github:<login>, with the page's session and CSRF rules. Refused before the backend is
// asked: no CSRF token, a login the rule refuses, an empty, forged or huge reason, a planHash too long, an
// environment that does not exist; refused by the backend: a stale planHash, windows that are open. A
// skipConfirmation environment's deferred plan (no pending record) is offered by its status's planHash.
// Without WithBreakGlass the page offers none.
func TestBreakGlassForm(t *testing.T) {
	b := &glassBackend{backend: newBackend(t)}
	b.set("prod", func(e *status.Environment) { e.Windows = closed() })

	t.Run("not offered without the rule", func(t *testing.T) {
		br := signedIn(t, serve(t, b, WithDemoLogin("demo")))
		if _, body := br.get("/environments/prod"); strings.Contains(body, `id="break-glass"`) {
			t.Errorf("the page offers break-glass without WithBreakGlass:\n%s", body)
		}
		csrf := br.csrf("/environments/prod")
		if code, _, _ := br.post("/environments/prod/break-glass", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-42"}}); code != http.StatusNotFound {
			t.Errorf("break-glass without the rule = %d, want 404", code)
		}
	})

	base := serve(t, b, WithDemoLogin("demo"), WithBreakGlass(glassRule))
	br := signedIn(t, base)
	_, body := br.get("/environments/prod")
	for _, want := range []string{`<section aria-labelledby="glass-h" id="break-glass">`,
		"Deploy windows closed: inside the deny window year-end; opens Fri 27 Nov 2026 09:00 UTC.",
		`action="/environments/prod/break-glass"`, `name="planHash" value="sha256:plan1"`, `name="reason" required maxlength="500"`} {
		if !strings.Contains(body, want) {
			t.Errorf("prod's page lacks %q:\n%s", want, body)
		}
	}
	csrf := br.csrf("/environments/prod")
	post := func(env string, form url.Values) (int, string) {
		t.Helper()
		code, h, body := br.post("/environments/"+env+"/break-glass", form)
		if code != http.StatusSeeOther {
			return code, body
		}
		_, page := br.get(h.Get("Location"))
		i := strings.Index(page, `id="flash"`)
		if i < 0 {
			t.Fatalf("no flash after the break-glass:\n%s", page)
		}
		return code, page[i:min(len(page), i+600)]
	}
	for _, tc := range []struct {
		name, env string
		form      url.Values
		code      int
		want      string
	}{
		{"no CSRF token", "prod", url.Values{"planHash": {"sha256:plan1"}, "reason": {"INC-42"}}, http.StatusForbidden, "CSRF token"},
		{"no such environment", "nope", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-42"}}, http.StatusNotFound, "There is no environment"},
		{"another environment's rule", "staging", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-42"}}, http.StatusForbidden,
			"demo may not break the glass in staging: breaking the glass in staging needs one of lock:admin, approve:staging"},
		{"no plan", "prod", url.Values{"csrf": {csrf}, "reason": {"INC-42"}}, http.StatusBadRequest, "names no plan"},
		{"a planHash too long", "prod", url.Values{"csrf": {csrf}, "planHash": {strings.Repeat("a", 129)}, "reason": {"INC-42"}}, http.StatusBadRequest, "129 bytes long"},
		{"no reason", "prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {" \t "}}, http.StatusSeeOther, "break-glass reason refused: empty"},
		{"a forged line", "prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-42\nbreak-glass by github:ceo"}}, http.StatusSeeOther,
			"a control character U&#43;000A"},
		{"an escape sequence", "prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-42 \x1b[2K"}}, http.StatusSeeOther, "a control character U&#43;001B"},
		{"a huge reason", "prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {strings.Repeat("é", 501)}}, http.StatusSeeOther, "501 characters long: at most 500"},
		{"a stale planHash", "prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:old"}, "reason": {"INC-42"}}, http.StatusSeeOther,
			"Nothing was let through: the plan you saw is no longer the one waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := post(tc.env, tc.form)
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Errorf("%d %s; want %d saying %q", code, got, tc.code, tc.want)
			}
		})
	}
	if got := b.broken(); len(got) != 0 {
		t.Fatalf("the backend let through %v after refused forms", got)
	}

	code, got := post("prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"  INC-42: payments are down  "}})
	if code != http.StatusSeeOther || !strings.Contains(got, "Break-glass by demo: 0 of 1 approvals; revision c0ffee000000 goes out through the closed deploy windows of prod once approved.") {
		t.Errorf("break-glass = %d %s", code, got)
	}
	if diff := cmp.Diff([]string{"prod sha256:plan1 github:demo: INC-42: payments are down"}, b.broken()); diff != "" {
		t.Errorf("the backend heard (-want +got):\n%s", diff)
	}

	// The windows open: nothing is offered, and a form sent from an older page is refused by the backend.
	b.set("prod", func(e *status.Environment) {
		e.Windows = &policy.Explanation{Open: true, Why: "no window is configured"}
	})
	if _, body := br.get("/environments/prod"); strings.Contains(body, `id="break-glass"`) {
		t.Errorf("break-glass offered while the windows are open:\n%s", body)
	}
	if code, got := post("prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-43"}}); code != http.StatusSeeOther ||
		!strings.Contains(got, "Not let through: ") || !strings.Contains(got, "are open now") {
		t.Errorf("break-glass with the windows open = %d %s", code, got)
	}

	// A skipConfirmation environment's deferred plan: nothing pending, the status's planHash is offered.
	b.set("prod", func(e *status.Environment) {
		e.Windows, e.Pending, e.Phase, e.SkipConfirmation = closed(), nil, status.PhaseDeferred, true
	})
	_, body = br.get("/environments/prod")
	if !strings.Contains(body, `id="no-plan"`) || !strings.Contains(body, `name="planHash" value="sha256:plan1"`) {
		t.Errorf("the deferred plan of a skipConfirmation environment is not offered:\n%s", body)
	}
	if code, got := post("prod", url.Values{"csrf": {csrf}, "planHash": {"sha256:plan1"}, "reason": {"INC-44"}}); code != http.StatusSeeOther ||
		!strings.Contains(got, "Break-glass by demo: applying revision c0ffee000000 to prod through its closed deploy windows.") {
		t.Errorf("break-glass of the deferred plan = %d %s", code, got)
	}

	// A login the rule refuses reads why, and no form.
	alt := serve(t, b, WithDemoLogin("demo"), WithBreakGlass(func(ctx context.Context, login, env string) (bool, string, error) {
		return false, "breaking the glass in prod needs one of lock:admin", nil
	}))
	if _, body := signedIn(t, alt).get("/environments/prod"); strings.Contains(body, `action="/environments/prod/break-glass"`) ||
		!strings.Contains(body, `You may not break the glass: breaking the glass in prod needs one of lock:admin`) {
		t.Errorf("a login the rule refuses:\n%s", body)
	}
}
