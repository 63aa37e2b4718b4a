package ui_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserBreakGlass: `reconciler run` with prod inside a freeze (a deny window in force) and GitHub
// sign-in. rita (read) sees the freeze and why she may not break the glass, and no button; maria (maintain:
// she may approve, so the default break-glass rule lets her) approves, the plan is deferred, and she
// deploys it through the freeze with the page's break-glass button and a reason: the reconciler applies it
// at once, and the history shows the break-glass by github:maria with her reason.
func TestBrowserBreakGlass(t *testing.T) {
	now := time.Now().UTC()
	freeze := fmt.Sprintf(`, windows: {deny: [{name: year-end, from: %q, to: %q}]}`,
		now.Add(-time.Hour).Format(time.RFC3339), now.Add(2*time.Hour).Format(time.RFC3339))
	s, _, signIn := startGitHubStack(t, freeze)

	t.Run("reader", func(t *testing.T) {
		ctx := signIn(t, "rita")
		run(t, ctx, "prod", chromedp.WaitVisible("#no-break-glass", chromedp.ByID))
		if got := text(t, ctx, "#break-glass"); !strings.Contains(got, "Deploy windows closed: inside the deny window year-end") ||
			!strings.Contains(got, "You may not break the glass: breaking the glass in prod needs one of lock:admin, approve:prod") || !strings.Contains(got, "@rita has read on acme/manifests") {
			t.Errorf("rita's break-glass section: %q", got)
		}
		var buttons int
		run(t, ctx, "counting buttons", chromedp.Evaluate(`document.querySelectorAll("#break-glass-submit").length`, &buttons))
		if buttons != 0 {
			t.Errorf("rita is offered %d break-glass buttons", buttons)
		}
	})

	ctx := signIn(t, "maria")
	run(t, ctx, "approving", chromedp.WaitVisible("#approve", chromedp.ByID), chromedp.Click("#approve", chromedp.ByID),
		chromedp.WaitVisible("#flash", chromedp.ByID))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Approved by maria") {
		t.Fatalf("after Approve: %q", got)
	}
	// Approved, the plan waits for the windows: the page says so and offers the break-glass.
	var phase string
	for deadline := time.Now().Add(30 * time.Second); phase != "Deferred"; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("prod never showed the approved plan deferred; the page says:\n%s", text(t, ctx, "main"))
		}
		run(t, ctx, "reading the phase", chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("main h1", chromedp.ByQuery),
			chromedp.Evaluate(`(document.querySelector("h1 .phase") || {textContent: ""}).textContent`, &phase))
	}
	if img := s.env.Image(t, s.ns, "web"); img != "example.com/web:1.0.0" {
		t.Fatalf("prod's web runs %s inside the freeze", img)
	}
	screenshot(t, ctx, "break-glass")
	run(t, ctx, "breaking the glass", chromedp.WaitVisible("#break-glass-submit", chromedp.ByID),
		chromedp.SetValue("#glass-reason", "INC-42: payments are down", chromedp.ByID),
		chromedp.Click("#break-glass-submit", chromedp.ByID), chromedp.WaitVisible("#flash", chromedp.ByID))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Break-glass by maria: applying revision") || !strings.Contains(got, "through its closed deploy windows") {
		t.Fatalf("after the break-glass: %q", got)
	}
	s.openGate(t)
	var history string
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(history, "Break-glass by github:maria: INC-42: payments are down"); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("prod's history never showed maria's break-glass; the page says:\n%s", text(t, ctx, "main"))
		}
		run(t, ctx, "reading the history", chromedp.Navigate(s.base+"/environments/prod"), chromedp.WaitVisible("main h1", chromedp.ByQuery),
			chromedp.Evaluate(`(document.querySelector("#history li") || {textContent: ""}).textContent`, &history))
	}
	if img := s.env.Image(t, s.ns, "web"); img != "example.com/web:2.0.0" {
		t.Errorf("prod's web runs %s after the break-glass, want example.com/web:2.0.0", img)
	}
}
