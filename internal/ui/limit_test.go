package ui

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestRateLimitPerLogin: a signed-in reader reloading in a loop gets 429
// with Retry-After once past the burst, before the state is read; the
// stylesheet and the sign-in page are not counted, and the bucket refills.
func TestRateLimitPerLogin(t *testing.T) {
	b := &countingBackend{backend: newBackend(t)}
	base := serve(t, b, WithDemoLogin("demo"), WithRateLimit(2, 3))
	br := signedIn(t, base)
	for i := range 3 {
		if code, body := br.get("/"); code != http.StatusOK {
			t.Fatalf("request %d = %d %s", i, code, body)
		}
	}
	reads := b.reads()
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	code, h, body := br.do(req)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || !strings.Contains(body, "demo sent more than 3 requests in a row; wait 1 s and reload.") {
		t.Fatalf("4th request = %d (Retry-After %q) %s", code, h.Get("Retry-After"), body)
	}
	if b.reads() != reads {
		t.Errorf("the refused request read the state %d times", b.reads()-reads)
	}
	if code, _ := br.get("/static/app.css"); code != http.StatusOK {
		t.Errorf("stylesheet while limited = %d", code)
	}
	if code, _ := newBrowser(t, base).get("/"); code != http.StatusUnauthorized {
		t.Errorf("a signed-out visitor while demo is limited = %d, want the sign-in page (401)", code)
	}
	// Two a second: within a second the bucket holds one more (a refused request takes nothing from it).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := br.get("/")
		if code == http.StatusOK {
			break
		}
		if code != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after the bucket refilled = %d %s", code, body)
		}
	}
}

func TestRateLimitOption(t *testing.T) {
	if _, err := New(newBackend(t), WithRateLimit(1, 0)); err == nil {
		t.Error("a burst of 0 was accepted")
	}
}

// countingBackend counts the state reads.
type countingBackend struct {
	*backend
	mu sync.Mutex
	n  int
}

func (c *countingBackend) Environment(ctx context.Context, env string) (*status.Environment, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.backend.Environment(ctx, env)
}

func (c *countingBackend) reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
