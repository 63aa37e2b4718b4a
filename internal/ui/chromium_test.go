package ui

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browse is browse, for the browser tests of package ui_test.
var Browse = browse

// chromium finds headless Chromium: $STAGEHAND_CHROMIUM, /usr/bin/chromium,
// or chromium on the PATH. Without it the test fails in CI (CI set; `make
// chromium` installs it) and is skipped elsewhere, saying how to get it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("STAGEHAND_CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium for the browser tests: run `make chromium` (apt-get install chromium) or set STAGEHAND_CHROMIUM")
	}
	t.Skip("no Chromium for the browser tests: run `make chromium` (apt-get install chromium) or set STAGEHAND_CHROMIUM; in CI this fails")
	return ""
}

// browse starts a fresh headless Chromium (its own profile, no network
// beyond what the page asks for) at width × height and returns its
// context; it ends with the test.
func browse(t *testing.T, width, height int) context.Context {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still be writing to the profile for a moment after
	// the browser is gone, and TempDir's cleanup fails the test on a directory that is not empty yet.
	profile, err := os.MkdirTemp("", "stagehand-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(profile),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}
