package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// countTokenReviews counts the TokenReviews sent through it.
type countTokenReviews struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countTokenReviews) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == "/apis/authentication.k8s.io/v1/tokenreviews" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// TestMadeUpKubernetesTokensAreThrottled: every token shaped like a JWT that
// is not cached costs the API server a TokenReview; past the verification
// budget the answer is 429 with RetryAfter and the API server is not asked.
// A ServiceAccount verified before goes on working, and once time has
// passed the budget is back.
func TestMadeUpKubernetesTokensAreThrottled(t *testing.T) {
	env := cluster.Env(t)
	var reviews atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countTokenReviews{rt, &reviews} })
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	deployer := saToken(t, c, ns, "deployer")
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	a, err := New(WithKubernetes(c, ns), WithVerifyRate(2, 3), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, deployer); err != nil {
		t.Fatal(err)
	}
	var refused, throttled int
	for i := range 20 {
		_, err := a.Authenticate(ctx, fmt.Sprintf("eyJmadeup%d.eyJ0.c2ln", i))
		var ae *Error
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
			refused++
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests && ae.RetryAfter == time.Second:
			throttled++
		default:
			t.Fatalf("made-up token %d: %v", i, err)
		}
	}
	if refused != 2 || throttled != 18 || reviews.Load() != 3 {
		t.Errorf("20 made-up tokens: %d refused, %d throttled, %d TokenReviews; want 2, 18 and 3 (the deployer's and the burst's 2)", refused, throttled, reviews.Load())
	}
	if p, err := a.Authenticate(ctx, deployer); err != nil || p.Kind != KindKubernetes {
		t.Errorf("the deployer during the flood = %v, %v", p, err)
	}
	now = now.Add(time.Second) // two more verifications
	for i := range 2 {
		if _, err := a.Authenticate(ctx, fmt.Sprintf("eyJlater%d.eyJ0.c2ln", i)); err == nil || err.(*Error).Status != http.StatusUnauthorized {
			t.Errorf("a made-up token a second later = %v, want a TokenReview refusal", err)
		}
	}
	if reviews.Load() != 5 {
		t.Errorf("%d TokenReviews, want 5", reviews.Load())
	}
	// The deployer's cached review expires during a flood that has spent
	// the budget: it is reviewed again all the same.
	now = now.Add(userTTL + time.Second)
	for i := range 10 {
		a.Authenticate(ctx, fmt.Sprintf("eyJflood%d.eyJ0.c2ln", i))
	}
	if _, err := a.Authenticate(ctx, "eyJone-more.eyJ0.c2ln"); err == nil || err.(*Error).Status != http.StatusTooManyRequests {
		t.Fatalf("a made-up token after the flood = %v, want 429 (the budget spent)", err)
	}
	if p, err := a.Authenticate(ctx, deployer); err != nil || p.Kind != KindKubernetes {
		t.Errorf("the deployer, its review expired, during the flood = %v, %v; want reviewed again", p, err)
	}
}

func TestWithVerifyRateRefused(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		burst int
	}{{-1, 5}, {1, 0}} {
		if _, err := New(WithVerifyRate(tc.rate, tc.burst)); err == nil {
			t.Errorf("WithVerifyRate(%v, %d) accepted", tc.rate, tc.burst)
		}
	}
}
