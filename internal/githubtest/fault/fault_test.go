package fault

import (
	"net/http"
	"testing"
)

func TestTakeConsumesInOrder(t *testing.T) {
	in := New(0)
	in.Inject(Fault{Method: http.MethodPost, Route: "/a", Status: 502, Times: 2})
	in.Inject(Fault{Status: 503})
	for i, want := range []int{502, 502, 503, 0} {
		var got int
		if f := in.Take(http.MethodPost, "/a"); f != nil {
			got = f.Status
		}
		if got != want {
			t.Errorf("request %d: status %d, want %d", i+1, got, want)
		}
	}
	if in.Left() != 0 {
		t.Errorf("%d faults left, want none", in.Left())
	}
}

func TestRateLimitCountsAsGitHub(t *testing.T) {
	in := New(0)
	in.RateLimitHeaders(http.Header{}, "/repos/{owner}/{repo}", http.StatusOK) // the window starts
	in.SetRateLimit(5000, 10)
	h := http.Header{}
	in.RateLimitHeaders(h, "/repos/{owner}/{repo}", http.StatusOK)
	in.RateLimitHeaders(http.Header{}, "/repos/{owner}/{repo}", http.StatusNotModified) // a 304 is free
	in.RateLimitHeaders(http.Header{}, "/app/installations/{installation_id}/access_tokens", http.StatusCreated)
	if got := in.RateLimitUsed(); got != 4991 {
		t.Errorf("used %d, want 4991 (4990 before, one counted request)", got)
	}
	if h.Get("X-RateLimit-Remaining") != "9" || h.Get("X-RateLimit-Limit") != "5000" {
		t.Errorf("headers %v", h)
	}
}
