package ui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// firstCommits dates r2's range two hours and r3's range four hours before
// their deploys ended.
type firstCommits struct{}

func (firstCommits) FirstCommit(_ context.Context, _, head string) (time.Time, error) {
	switch head {
	case "r2":
		return t0.Add(-9*24*time.Hour - 2*time.Hour), nil
	case "r3":
		return t0.Add(-2*24*time.Hour - 4*time.Hour), nil
	}
	return time.Time{}, errors.New("unknown revision")
}

func TestDORAPanel(t *testing.T) {
	day := 24 * time.Hour
	entry := func(id int64, rev, result string, ago time.Duration) approval.Entry {
		return approval.Entry{ID: id, Revision: rev, Result: result, Approver: "carol", Started: t0.Add(-ago - time.Minute), Finished: t0.Add(-ago)}
	}
	tests := []struct {
		name    string
		history []approval.Entry
		want    []string
		notWant []string
	}{
		{
			name: "a failure restored a day later, and a deploy since",
			history: []approval.Entry{entry(3, "r3", approval.ResultSucceeded, 2*day), entry(2, "r2", approval.ResultSucceeded, 9*day),
				entry(1, "r1", approval.ResultFailed, 10*day)},
			want: []string{`<h2 id="dora-h">Delivery, last 30d</h2>`,
				`<dd data-figure="frequency">0.5 a week</dd><dd class="muted">2 succeeded of 3 deploys</dd>`,
				`<dd data-figure="lead-time">3h0m0s</dd><dd class="muted">median of 2</dd>`,
				`<dd data-figure="change-failure-rate">33%</dd><dd class="muted">1 of 3</dd>`,
				`<dd data-figure="time-to-restore">24h0m0s</dd><dd class="muted">median of 1 incident</dd>`},
			notWant: []string{`id="dora-reach"`},
		},
		{
			name:    "a history trimmed to nine days: the panel says how far it reaches",
			history: []approval.Entry{entry(3, "r3", approval.ResultSucceeded, 2*day), entry(2, "r2", approval.ResultSucceeded, 9*day)},
			want: []string{`<p class="muted" id="dora-reach">The history reaches back only to <time datetime="2026-11-15T09:00:00Z">`,
				`<dd data-figure="frequency">1.6 a week</dd>`, `<dd data-figure="time-to-restore">—</dd>`},
		},
		{
			name: "nothing deployed yet",
			want: []string{`<dd data-figure="frequency">0.0 a day</dd><dd class="muted">0 succeeded of 0 deploys</dd>`,
				`<dd data-figure="change-failure-rate">—</dd>`, `<dd data-figure="lead-time">—</dd>`},
			notWant: []string{`id="dora-reach"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t)
			b.set("prod", func(e *status.Environment) { e.History = tt.history })
			r, err := dora.NewReporter(dora.WithCommits(firstCommits{}), dora.WithClock(func() time.Time { return t0 }))
			if err != nil {
				t.Fatal(err)
			}
			br := signedIn(t, serve(t, b, WithDemoLogin("demo"), WithDORA(r)))
			code, body := br.get("/environments/prod")
			if code != 200 {
				t.Fatalf("GET /environments/prod = %d %s", code, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("the page has %q", w)
				}
			}
		})
	}
}
