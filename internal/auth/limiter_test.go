package auth

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestLimiterPerCaller(t *testing.T) {
	l := NewLimiter(1, 2)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		caller string
		ok     bool
	}{{"mallory", true}, {"mallory", true}, {"mallory", false}, {"alice", true}, {"alice", true}, {"alice", false}} {
		if ok, _ := l.Allow(step.caller, now); ok != step.ok {
			t.Errorf("%s allowed %v, want %v", step.caller, ok, step.ok)
		}
	}
	if ok, wait := l.Allow("mallory", now); ok || wait <= 0 || wait > time.Second {
		t.Errorf("mallory past the burst: allowed %v, wait %s; want refused for at most a second", ok, wait)
	}
	if ok, wait := l.Allow("mallory", now.Add(time.Second)); !ok {
		t.Errorf("mallory a second later waits %s", wait)
	}
	if ok, _ := (*Limiter)(nil).Allow("x", now); !ok {
		t.Error("no limiter refused")
	}
	if NewLimiter(0, 10) != nil {
		t.Error("a rate of 0 is a limit")
	}
}

// TestLimiterForgetsIdleCallers: past MaxLimited callers, those whose
// bucket is full again are forgotten, and one still limited is not.
func TestLimiterForgetsIdleCallers(t *testing.T) {
	l := NewLimiter(1, 1)
	now := time.Now()
	if ok, _ := l.Allow("github:mallory", now); !ok {
		t.Fatal("mallory's first request refused")
	}
	for i := range MaxLimited - 1 {
		l.buckets[fmt.Sprintf("github:user%d", i)] = rate.NewLimiter(l.perSecond, l.burst) // idle: full
	}
	l.Allow("github:newcomer", now)
	if _, kept := l.buckets["github:mallory"]; !kept || len(l.buckets) != 2 {
		t.Errorf("after a newcomer past %d callers: %d buckets (mallory kept: %v), want mallory's and the newcomer's", MaxLimited, len(l.buckets), kept)
	}
	if ok, _ := l.Allow("github:mallory", now); ok {
		t.Error("mallory's limit was forgotten")
	}
}
