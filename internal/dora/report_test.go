package dora_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// commitTimes dates the scripted revisions: each range's first commit is
// an hour before its deploy ended, except r7's (a range git cannot date:
// rewritten away) and r1's (two hours).
type commitTimes map[string]time.Time

func (c commitTimes) FirstCommit(_ context.Context, base, head string) (time.Time, error) {
	if t, ok := c[head]; ok {
		return t, nil
	}
	return time.Time{}, errors.New("not in the repository")
}

func scriptedCommits() commitTimes {
	c := commitTimes{}
	for _, e := range scripted() {
		c[e.Revision] = e.Finished.Add(-time.Hour)
	}
	c["r1"] = at(0, -time.Hour)
	delete(c, "r7")
	return c
}

func TestReport(t *testing.T) {
	h := 3600.0
	tests := []struct {
		name   string
		trim   int64 // the history keeps entries from trim on (0: all)
		window time.Duration
		to     time.Time
		want   dora.Report
	}{
		{
			name: "the whole history", window: 30 * 24 * time.Hour, to: at(30, 0),
			want: dora.Report{Window: "30d", From: at(0, 0), To: at(30, 0), HistoryFrom: at(0, time.Hour), Complete: true,
				Deploys: 12, Succeeded: 9, Failed: 2, RolledBack: 1, DeploysPerDay: 9.0 / 30,
				// 1: 2h; 4, 5, 12, 13: 1h; 7: 1h; 9: unknown (r7).
				LeadTime: dora.Durations{Count: 6, MedianSeconds: h, P90Seconds: 2 * h, MaxSeconds: 2 * h}, LeadTimeUnknown: 1,
				ChangeFailures: 4, ChangeFailureRate: 4.0 / 12,
				TimeToRestore: dora.Durations{Count: 3, MedianSeconds: 3 * h, P90Seconds: 24 * h, MaxSeconds: 24 * h}},
		},
		{
			name: "a week", window: 7 * 24 * time.Hour, to: at(12, 0),
			// 5 (at the window's start), 6, 7, 9, 10, 11, 12.
			want: dora.Report{Window: "7d", From: at(5, 0), To: at(12, 0), HistoryFrom: at(0, time.Hour), Complete: true,
				Deploys: 7, Succeeded: 5, Failed: 1, RolledBack: 1, DeploysPerDay: 5.0 / 7,
				LeadTime: dora.Durations{Count: 3, MedianSeconds: h, P90Seconds: h, MaxSeconds: h}, LeadTimeUnknown: 1,
				ChangeFailures: 3, ChangeFailureRate: 3.0 / 7,
				TimeToRestore: dora.Durations{Count: 2, MedianSeconds: (2*h + h/6 + 24*h) / 2, P90Seconds: 24 * h, MaxSeconds: 24 * h}},
		},
		{
			name: "a history trimmed to entries 5 on: the figures over what it reaches", trim: 5, window: 30 * 24 * time.Hour, to: at(30, 0),
			want: dora.Report{Window: "30d", From: at(0, 0), To: at(30, 0), HistoryFrom: at(5, 0), Complete: false,
				Deploys: 9, Succeeded: 7, Failed: 1, RolledBack: 1, DeploysPerDay: 7.0 / 25,
				LeadTime: dora.Durations{Count: 4, MedianSeconds: h, P90Seconds: h, MaxSeconds: h}, LeadTimeUnknown: 1,
				ChangeFailures: 3, ChangeFailureRate: 3.0 / 9,
				TimeToRestore: dora.Durations{Count: 2, MedianSeconds: (2*h + h/6 + 24*h) / 2, P90Seconds: 24 * h, MaxSeconds: 24 * h}},
		},
		{
			name: "a trimmed history that reaches past the window is complete", trim: 5, window: 2 * 24 * time.Hour, to: at(12, 0),
			want: dora.Report{Window: "2d", From: at(10, 0), To: at(12, 0), HistoryFrom: at(5, 0), Complete: true,
				Deploys: 3, Succeeded: 1, Failed: 1, RolledBack: 1, DeploysPerDay: 0.5,
				LeadTime:       dora.Durations{Count: 1, MedianSeconds: h, P90Seconds: h, MaxSeconds: h},
				ChangeFailures: 2, ChangeFailureRate: 2.0 / 3,
				TimeToRestore: dora.Durations{Count: 1, MedianSeconds: 24 * h, P90Seconds: 24 * h, MaxSeconds: 24 * h}},
		},
		{
			name: "no history", trim: 99, window: 24 * time.Hour, to: at(30, 0),
			want: dora.Report{Window: "1d", From: at(29, 0), To: at(30, 0), Complete: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			history := scripted()
			if tt.trim > 0 {
				history = history[:max(len(history)-int(tt.trim)+1, 0)]
			}
			r, err := dora.NewReporter(dora.WithCommits(scriptedCommits()), dora.WithClock(func() time.Time { return tt.to }))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Environment = "prod"
			got := r.Report(context.Background(), "prod", history, tt.window)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Report (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWindow(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "", want: 30 * 24 * time.Hour},
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "2w", want: 14 * 24 * time.Hour},
		{in: "36h", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "366d", want: 366 * 24 * time.Hour},
		{in: "367d", wantErr: `invalid window "367d": longer than the longest window, 366d`},
		{in: "53w", wantErr: `invalid window "53w": longer than the longest window, 366d`},
		{in: "99999999999d", wantErr: `invalid window "99999999999d": want a number of days`},
		{in: "9000h", wantErr: `invalid window "9000h": longer than the longest window, 366d`},
		{in: "10s", wantErr: `invalid window "10s": shorter than a minute`},
		{in: "-3d", wantErr: `invalid window "-3d": want a number of days`},
		{in: "-3h", wantErr: `invalid window "-3h": shorter than a minute`},
		{in: "+3h", wantErr: `invalid window "+3h": want a number of days`},
		{in: "d", wantErr: `invalid window "d": want a number of days`},
		{in: "month", wantErr: `invalid window "month": want a number of days`},
		{in: "3 d", wantErr: `invalid window "3 d": want a number of days`},
		{in: strings.Repeat("9", 5000) + "d", wantErr: `invalid window "9999999999999999999999999999`},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 20 {
			name = name[:20] + "…"
		}
		t.Run(name, func(t *testing.T) {
			got, err := dora.ParseWindow(tt.in)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, dora.ErrWindow) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseWindow(%q) = %v, %v; want an ErrWindow containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseWindow(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
