package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHoldMemory(t *testing.T) {
	testHold(t, func(t *testing.T, c *fakeClock) *Service {
		s, err := New(NewMemory(), WithClock(c.Now))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestHoldKubernetes stores a hold as a Lock object: the CRD accepts the type.
func TestHoldKubernetes(t *testing.T) { testHold(t, newKubeService) }

func testHold(t *testing.T, newService func(*testing.T, *fakeClock) *Service) {
	ctx := context.Background()
	c := newFakeClock()
	s := newService(t, c)
	pr := "https://github.com/acme/manifests/pull/7"

	// A freeze on a prefix does not stop a hold being placed.
	if _, err := s.Lock(ctx, newLock(c, "apps", Freeze, 10*time.Hour)); err != nil {
		t.Fatal(err)
	}
	h, err := s.PlaceHold(ctx, NewHold("apps/production", "alice", c.Now().Add(24*time.Hour), map[string]string{HoldLinkPullRequest: pr}))
	if err != nil {
		t.Fatalf("placing hold under a freeze: %v", err)
	}
	if h.Path != "apps/production/hold" || h.Type != Hold || h.Author != "alice" {
		t.Errorf("hold = %+v, want alice's hold at apps/production/hold", h)
	}
	if _, err := s.Unlock(ctx, "apps", Freeze, false); err != nil {
		t.Fatal(err)
	}

	// It stops automation, at the environment, its targets and services, and lets deploys pass.
	for _, p := range []string{"apps/production/hold"} {
		got, err := s.Check(ctx, p, Automation, true)
		if err != nil || len(got) != 1 || got[0].Type != Hold {
			t.Errorf("Check(%s, automation) = %v, %v; want the hold", p, got, err)
		}
	}
	within, err := s.Within(ctx, "apps/production", Automation)
	if err != nil || len(within) != 1 {
		t.Errorf("Within(apps/production, automation) = %v, %v; want the hold", within, err)
	}
	if got, err := s.Within(ctx, "apps/production", Deploy); err != nil || len(got) != 0 {
		t.Errorf("Within(apps/production, deploy) = %v, %v; want nothing: a hold lets deploys pass", got, err)
	}
	msg := within[0].BlockingMessage(time.UTC)
	for _, want := range []string{"apps/production/hold is held by a rollback of alice until Sun 1 Jan, 10:30", pr, "reconciler release"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}

	// Placing it again refreshes it in place: new expiry and link, creation kept.
	c.Advance(time.Hour)
	h2, err := s.PlaceHold(ctx, NewHold("apps/production", "bob", c.Now().Add(48*time.Hour), map[string]string{HoldLinkPullRequest: pr + "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if !h2.CreatedAt.Equal(h.CreatedAt) || !h2.ExpiresAt.Equal(c.Now().Add(48*time.Hour)) || h2.Author != "bob" || h2.Links[HoldLinkPullRequest] != pr+"0" {
		t.Errorf("refreshed hold = %+v, want bob's, created %s, expiring in 48h", h2, h.CreatedAt)
	}

	// Releasing removes it; releasing again says there is none.
	got, err := s.ReleaseHold(ctx, "apps/production")
	if err != nil || got.Path != "apps/production/hold" {
		t.Fatalf("ReleaseHold = %+v, %v", got, err)
	}
	if _, err := s.ReleaseHold(ctx, "apps/production"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second ReleaseHold: err = %v, want ErrNotFound", err)
	}

	// Another lock at the hold's own path refuses it, naming that lock.
	if _, err := s.Lock(ctx, newLock(c, "apps/production/hold", Incident, time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, err = s.PlaceHold(ctx, NewHold("apps/production", "alice", c.Now().Add(time.Hour), nil))
	var le *LockedError
	if !errors.As(err, &le) || le.Locks[0].Type != Incident {
		t.Errorf("hold over an incident lock: err = %v, want a LockedError naming it", err)
	}

	// Bad input is refused before anything is stored.
	for name, bad := range map[string]Lock{
		"not a hold":        {Path: "apps/x/hold", Type: Deploy, Author: "a", ExpiresAt: c.Now().Add(time.Hour)},
		"allows automation": {Path: "apps/x/hold", Type: Hold, Author: "a", ExpiresAt: c.Now().Add(time.Hour), Allow: []Type{Automation}},
		"past expiry":       NewHold("apps/x", "a", c.Now().Add(-time.Minute), nil),
		"no author":         NewHold("apps/x", "", c.Now().Add(time.Hour), nil),
	} {
		var ie *InvalidError
		if _, err := s.PlaceHold(ctx, bad); !errors.As(err, &ie) {
			t.Errorf("%s: err = %v, want an InvalidError", name, err)
		}
	}
}
