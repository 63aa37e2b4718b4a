package prbot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

// TestMergeWatchHonoursTheRateLimit: with one request left after the
// first read and the reset an hour away, the watch paces its reads to last
// until the reset (the next in half an hour: after its context's end)
// instead of reading every Interval and spending the last request.
func TestMergeWatchHonoursTheRateLimit(t *testing.T) {
	f := newFixture(t, map[string]string{"a.json": "{}"})
	f.Srv.Repo(owner, repo).Commit("bump", map[string]string{"a.json": `{"b": 1}`}, "bump")
	number := f.Srv.Repo(owner, repo).OpenPullRequest("bump", "main", "bump", "ci")
	f.Srv.Faults().SetRateLimit(60, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var said []string
	_, err := MergeWatch{Owner: owner, Repo: repo, Number: number, Interval: 10 * time.Millisecond, Progress: func(s string) { said = append(said, s) }}.Wait(ctx, f.GH)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the context's deadline", err)
	}
	if n := f.Srv.CountRequests("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"); n != 1 {
		t.Errorf("read the pull request %d times with one left after the first, want 1 (progress %q)", n, said)
	}
}

func TestPaced(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		rate github.Rate
		want time.Duration
	}{
		{"no headers", github.Rate{}, 0},
		{"plenty left", github.Rate{Limit: 5000, Remaining: 4999, Reset: github.Timestamp{Time: now.Add(time.Hour)}}, time.Hour / 5000},
		{"anonymous, 59 left", github.Rate{Limit: 60, Remaining: 59, Reset: github.Timestamp{Time: now.Add(time.Hour)}}, time.Minute},
		{"none left", github.Rate{Limit: 60, Remaining: 0, Reset: github.Timestamp{Time: now.Add(time.Hour)}}, time.Hour + time.Second},
		{"reset passed", github.Rate{Limit: 60, Remaining: 0, Reset: github.Timestamp{Time: now.Add(-time.Second)}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := paced(tt.rate, now); got != tt.want {
				t.Errorf("paced = %s, want %s", got, tt.want)
			}
		})
	}
}
