package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth"
)

// TestMadeUpGitHubTokensAreThrottled: anyone who reaches the API can send
// tokens shaped like GitHub's, and each new one costs a GET /user. Past the
// verification budget they get 429 with Retry-After and GitHub is not asked;
// named tokens and GitHub logins verified before go on working.
func TestMadeUpGitHubTokensAreThrottled(t *testing.T) {
	gh := newGitHub(t)
	maria := gh.OAuth().UserToken("maria")
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // a clock that stands still: the bucket never refills
	srv := newServer(t, &backend{}, withOps(t, append(withGitHub(gh),
		auth.WithClock(func() time.Time { return now }), auth.WithVerifyRate(1, 5))...))
	if code, body := call(t, srv, "GET", "/api/v1/environments", maria, ""); code != 200 {
		t.Fatalf("maria before the flood = %d %s", code, body)
	}
	codes := map[int]int{}
	var retryAfter string
	for i := range 50 {
		req, err := http.NewRequest("GET", srv.URL+"/api/v1/environments", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+fmt.Sprintf("ghp_madeup%030d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			retryAfter = resp.Header.Get("Retry-After")
		}
	}
	if codes[401] != 4 || codes[429] != 46 {
		t.Errorf("answers to 50 made-up tokens = %v, want 4×401 (the rest of the burst of 5) and 46×429", codes)
	}
	if retryAfter != "1" {
		t.Errorf("Retry-After = %q, want 1 (one verification a second)", retryAfter)
	}
	if n := gh.CountRequests("GET", "/user"); n != 5 {
		t.Errorf("GET /user asked %d times, want 5 (maria, then the burst's 4)", n)
	}
	for _, tok := range []string{maria, token} {
		if code, body := call(t, srv, "GET", "/api/v1/environments", tok, ""); code != 200 {
			t.Errorf("%s… during the flood = %d %s", tok[:4], code, body)
		}
	}
	code, body := call(t, srv, "GET", "/api/v1/environments", "ghp_"+strings.Repeat("z", 36), "")
	if code != 429 || !strings.Contains(body, "too many new tokens are being verified right now") {
		t.Errorf("another made-up token = %d %s", code, body)
	}
}
