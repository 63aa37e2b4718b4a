package dora

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// MaxWindow is the longest window a report covers: a longer one is refused
// (ErrWindow). Prometheus answers over longer spans (docs/observability.md).
const MaxWindow = 366 * 24 * time.Hour

// minWindow is the shortest window a report covers.
const minWindow = time.Minute

// DefaultWindow is the window of a report that names none.
const DefaultWindow = 30 * 24 * time.Hour

// ErrWindow is returned (wrapped) by ParseWindow for a window it refuses.
var ErrWindow = errors.New("invalid window")

// ParseWindow reads a report's window: a number of days ("30d") or weeks
// ("2w"), or a Go duration ("36h", "90m"), from a minute to MaxWindow.
func ParseWindow(s string) (time.Duration, error) {
	if s == "" {
		return DefaultWindow, nil
	}
	if len(s) > 32 {
		return 0, fmt.Errorf("%w %.32q…: want a number of days (30d), weeks (2w) or a duration (36h)", ErrWindow, s)
	}
	var d time.Duration
	switch unit := s[len(s)-1]; unit {
	case 'd', 'w':
		n, err := strconv.ParseUint(s[:len(s)-1], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%w %q: want a number of days (30d), weeks (2w) or a duration (36h)", ErrWindow, s)
		}
		days := n
		if unit == 'w' {
			days *= 7
		}
		if days > uint64(MaxWindow/(24*time.Hour)) {
			return 0, fmt.Errorf("%w %q: longer than the longest window, %dd", ErrWindow, s, MaxWindow/(24*time.Hour))
		}
		d = time.Duration(days) * 24 * time.Hour
	default:
		var err error
		if d, err = time.ParseDuration(s); err != nil || strings.HasPrefix(s, "+") {
			return 0, fmt.Errorf("%w %q: want a number of days (30d), weeks (2w) or a duration (36h)", ErrWindow, s)
		}
	}
	if d > MaxWindow {
		return 0, fmt.Errorf("%w %q: longer than the longest window, %dd", ErrWindow, s, MaxWindow/(24*time.Hour))
	}
	if d < minWindow {
		return 0, fmt.Errorf("%w %q: shorter than a minute", ErrWindow, s)
	}
	return d, nil
}

// FormatWindow writes d as ParseWindow reads it: whole days as "30d".
func FormatWindow(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// Report is an environment's four DORA figures over a window, computed from
// its history, as GET /api/v1/environments/{env}/dora answers.
type Report struct {
	Environment string `json:"environment"`
	// Window is the window asked for ("30d"); the figures count the deploys
	// that finished in [From, To].
	Window string    `json:"window"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	// HistoryFrom is when the oldest entry the history holds finished (zero
	// for an empty history), and Complete whether the history covers the
	// whole window: it holds an entry from before From, or every entry ever
	// recorded (its oldest is number 1). When it does not, the figures are
	// over [HistoryFrom, To] only: the state keeps the newest entries of
	// each environment, Prometheus keeps the metrics for longer.
	HistoryFrom time.Time `json:"historyFrom,omitzero"`
	Complete    bool      `json:"complete"`
	// Deploys counts the deploys that ended in the window, by result.
	Deploys    int `json:"deploys"`
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
	RolledBack int `json:"rolledBack"`
	// DeploysPerDay is the deployment frequency: succeeded deploys per day
	// over the span the history covers.
	DeploysPerDay float64 `json:"deploysPerDay"`
	// LeadTime is from the first commit of each succeeded deploy's range to
	// its end (deployed and verified); LeadTimeUnknown counts the succeeded
	// deploys whose first commit git could not date (a rewritten history, a
	// range past the deepest fetch, the same revision again).
	LeadTime        Durations `json:"leadTime"`
	LeadTimeUnknown int       `json:"leadTimeUnknown,omitempty"`
	// ChangeFailures counts the deploys that failed, were rolled back, or
	// were followed by an incident rollback within the rollback window;
	// ChangeFailureRate is ChangeFailures / Deploys (0 without deploys).
	ChangeFailures    int     `json:"changeFailures"`
	ChangeFailureRate float64 `json:"changeFailureRate"`
	// TimeToRestore is from the first change failure of an incident to the
	// succeeded deploy that ended it, for the incidents ended in the window.
	TimeToRestore Durations `json:"timeToRestore"`
}

// Durations summarises a set of durations, in seconds.
type Durations struct {
	Count         int     `json:"count"`
	MedianSeconds float64 `json:"medianSeconds"`
	P90Seconds    float64 `json:"p90Seconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
}

// summarise is ds's count, median, 90th percentile (nearest rank) and maximum.
func summarise(ds []time.Duration) Durations {
	if len(ds) == 0 {
		return Durations{}
	}
	slices.Sort(ds)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(ds)))) - 1
		return ds[max(i, 0)].Seconds()
	}
	median := ds[len(ds)/2].Seconds()
	if len(ds)%2 == 0 {
		median = (ds[len(ds)/2-1].Seconds() + median) / 2
	}
	return Durations{Count: len(ds), MedianSeconds: median, P90Seconds: rank(0.9), MaxSeconds: ds[len(ds)-1].Seconds()}
}

// Span is what a report covers: the environment, the window ending at To,
// and the rollback window.
type Span struct {
	Environment    string
	Window         time.Duration
	To             time.Time
	RollbackWindow time.Duration
}

// Compute is the report over span of history (newest first, as the state
// keeps it). firstCommits holds, by entry ID, the commit time of the first
// commit of each succeeded deploy's range (FirstCommits); a deploy missing
// from it counts in LeadTimeUnknown.
func Compute(history []approval.Entry, firstCommits map[int64]time.Time, span Span) Report {
	from := span.To.Add(-span.Window)
	r := Report{Environment: span.Environment, Window: FormatWindow(span.Window), From: from, To: span.To}
	if n := len(history); n > 0 {
		oldest := history[n-1]
		r.HistoryFrom = oldest.Finished
		r.Complete = oldest.ID == 1 || !oldest.Finished.After(from)
	} else {
		r.Complete = true
	}
	var leads, restores []time.Duration
	for _, d := range Deploys(history, span.RollbackWindow) {
		end := d.Entry.Finished
		if end.Before(from) || end.After(span.To) {
			continue
		}
		r.Deploys++
		switch d.Result {
		case Succeeded:
			r.Succeeded++
		case Failed:
			r.Failed++
		case RolledBack:
			r.RolledBack++
		}
		if d.Failure {
			r.ChangeFailures++
		}
		if !d.RestoredFrom.IsZero() {
			restores = append(restores, d.Restore())
		}
		if d.LeadTimeCounts() {
			if first, ok := firstCommits[d.Entry.ID]; ok {
				leads = append(leads, max(end.Sub(first), 0))
			} else {
				r.LeadTimeUnknown++
			}
		}
	}
	if r.Deploys > 0 {
		r.ChangeFailureRate = float64(r.ChangeFailures) / float64(r.Deploys)
	}
	covered := span.Window
	if !r.Complete {
		covered = span.To.Sub(r.HistoryFrom)
	}
	if days := covered.Hours() / 24; days > 0 {
		r.DeploysPerDay = float64(r.Succeeded) / days
	}
	r.LeadTime = summarise(leads)
	r.TimeToRestore = summarise(restores)
	return r
}
