package promote

import (
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// CheckName is the check run the reconciler reports an environment's deploys
// under; a successful one is the evidence that the stage runs a commit healthy.
func CheckName(env string) string { return "stagehand/" + env }

// Check is a completed stagehand/<env> check run on a commit.
type Check struct {
	ID         int64  `json:"id"`
	Conclusion string `json:"conclusion"`
	// Result is the sequence result the run reports (see CheckResult):
	// pass, warning, fail, or "" when it reports none (a withdrawn plan).
	Result      string    `json:"result,omitempty"`
	URL         string    `json:"url"`
	CompletedAt time.Time `json:"completedAt"`
}

// WarningTitle starts the title of a stagehand/<env> check run whose
// sequence finished with warning. Its conclusion is neutral, as a withdrawn
// (superseded) plan's is: the title tells them apart.
const WarningTitle = "Passed with warnings"

// CheckResult is the sequence result a completed stagehand/<env> check run
// with conclusion and title reports: success pass, failure fail, neutral
// with WarningTitle warning; "" for anything else (a withdrawn plan, a
// rejection).
func CheckResult(conclusion, title string) string {
	switch {
	case conclusion == "success":
		return ResultPass
	case conclusion == "failure":
		return ResultFail
	case conclusion == "neutral" && strings.HasPrefix(title, WarningTitle):
		return ResultWarning
	}
	return ""
}

// Healthy reports whether c is evidence that the earlier stage runs its
// commit healthy for s: a successful check, or, when s's triggeredOn
// accepts a warning, one whose sequence finished with warning.
func (s *Stage) Healthy(c *Check) bool {
	if c == nil {
		return false
	}
	if c.Conclusion == "success" {
		return true
	}
	return c.Result == ResultWarning && s.TriggeredOn.Accepts(ResultWarning)
}

// Observation is one commit of the base branch with the earlier stage as
// resolved at that commit and the stage's newest completed check run on it.
type Observation struct {
	Commit string
	// Stage is the earlier stage at Commit; nil when it was not resolved
	// there (a commit without a successful check needs no Stage, except
	// History[0], the head, which always has one).
	Stage *manifest.Environment
	// Check is nil when the commit has no completed stagehand/<from> check run.
	Check *Check
}

// Evidence says where and since when the earlier stage has run a service's
// promoted versions healthy.
type Evidence struct {
	// Commit and Check are the newest successful check of the earlier stage.
	Commit string `json:"commit"`
	Check  Check  `json:"check"`
	// Since is when the earliest successful check in an unbroken run of
	// commits with these versions completed: the start of the soak.
	Since time.Time `json:"since"`
}

// Held is a differing service that is not promoted now, and why.
type Held struct {
	Service string `json:"service"`
	Reason  string `json:"reason"`
	// Until is when it becomes eligible, when that is known.
	Until time.Time `json:"until,omitzero"`
}

// Input is everything Evaluate needs about one promotion.
type Input struct {
	Pair Pair
	// Stage is the later stage's configuration (requires, window).
	Stage Stage
	// History is the base branch newest first: History[0] is its head. With
	// requires.healthy it should reach back far enough to find a success.
	History []Observation
	// Target is the later stage at the head of the base branch.
	Target *manifest.Environment
	// Locks are the messages of locks blocking the later stage (empty: free).
	Locks []string
	// Frozen says why the later stage's deploy windows are closed now ("": open, or not known): a
	// promotion into a frozen stage waits, as its deploy would.
	Frozen string
	Now    time.Time
}

// Decision is what may happen for a promotion now.
type Decision struct {
	Pair Pair `json:"pair"`
	// Blocked is set when nothing may be opened or merged into the later
	// stage (a lock, a closed window); Changes still says what would move.
	Blocked string `json:"blocked,omitempty"`
	// Source is the commit whose earlier stage is promoted.
	Source string `json:"source,omitempty"`
	// Changes are the services to promote now.
	Changes []Change `json:"changes"`
	// Held are differing services that must wait (not healthy, soaking).
	Held []Held `json:"held,omitempty"`
}

// Evaluate applies the later stage's gates to the differences between the
// stages and decides what to promote now:
//
//   - window: outside the promotion window nothing is opened or merged;
//   - locks: a locked later stage blocks opening and merging;
//   - freeze: so do its deploy windows while they are closed (Frozen);
//   - healthy: the versions promoted are those of the newest commit whose
//     stagehand/<from> check succeeded (without it, those of the head);
//   - soak: a service is promoted once its versions have run healthy for
//     at least requires.soak, counted from the earliest success in the
//     unbroken run of successful checks with the same versions;
//   - re-check: a service is held when a commit newer than the success,
//     whose earlier stage still runs its versions, completed its check
//     with failure (its sequence failed).
func Evaluate(in Input) Decision {
	d := Decision{Pair: in.Pair}
	if len(in.History) == 0 || in.Target == nil {
		d.Blocked = "nothing to compare: no commits"
		return d
	}
	source := 0
	if in.Stage.Requires.Healthy {
		source = -1
		for i, o := range in.History {
			if in.Stage.Healthy(o.Check) {
				source = i
				break
			}
		}
	}
	if source < 0 {
		for _, c := range Diff(in.History[0].Stage, in.Target) {
			d.Held = append(d.Held, Held{Service: c.Service, Reason: fmt.Sprintf("not healthy: no successful %s check run on the %d newest commit(s)", CheckName(in.Pair.From), len(in.History))})
		}
	} else {
		obs := in.History[source]
		d.Source = obs.Commit
		for _, c := range Diff(obs.Stage, in.Target) {
			if in.Stage.Requires.Healthy {
				if failed, ok := failedSince(&in.Stage, in.History[:source], c.Entry); ok {
					d.Held = append(d.Held, Held{Service: c.Service, Reason: fmt.Sprintf("not healthy any more: the %s sequence of %s, running these versions, finished with %s at %s",
						in.Pair.From, short(failed.Commit), SequenceResult(failed.Check.Conclusion), failed.Check.CompletedAt.UTC().Format(time.RFC3339))})
					continue
				}
				ev := evidence(&in.Stage, in.History[source:], c.Entry)
				c.Health = &ev
				if soak := in.Stage.Requires.Soak; soak > 0 {
					if ripe := ev.Since.Add(soak); in.Now.Before(ripe) {
						d.Held = append(d.Held, Held{Service: c.Service, Until: ripe,
							Reason: fmt.Sprintf("soaking: healthy in %s for %s of %s", in.Pair.From, in.Now.Sub(ev.Since).Truncate(time.Second), soak)})
						continue
					}
				}
			}
			d.Changes = append(d.Changes, c)
		}
		// Newer versions in the earlier stage that are not healthy yet.
		if source > 0 {
			for _, c := range Diff(in.History[0].Stage, obs.Stage) {
				d.Held = append(d.Held, Held{Service: c.Service, Reason: fmt.Sprintf("newer versions at %s are not healthy yet (no successful %s check run there)", short(in.History[0].Commit), CheckName(in.Pair.From))})
			}
		}
	}
	var blocked []string
	if w := in.Stage.Window; w != nil && !w.Open(in.Now) {
		when := "it never opens: the schedule never fires"
		if next := w.Opens(in.Now); !next.IsZero() {
			when = "it opens at " + next.UTC().Format(time.RFC3339)
		}
		blocked = append(blocked, fmt.Sprintf("promotion window %q (%s) is closed; %s", w.Schedule, w.Duration, when))
	}
	if len(in.Locks) > 0 {
		blocked = append(blocked, fmt.Sprintf("stage %s is locked: %s", in.Pair.To, strings.Join(in.Locks, "; ")))
	}
	if in.Frozen != "" {
		blocked = append(blocked, fmt.Sprintf("stage %s is frozen: its deploy windows are %s", in.Pair.To, in.Frozen))
	}
	d.Blocked = strings.Join(blocked, "; ")
	return d
}

// SequenceResult names the result of the sequence a completed
// stagehand/<env> check run reports by its conclusion alone: success pass,
// neutral warning, failure fail (see CheckResult for a neutral run's title).
func SequenceResult(conclusion string) string {
	switch conclusion {
	case "success":
		return ResultPass
	case "neutral":
		return ResultWarning
	case "failure":
		return ResultFail
	}
	return conclusion
}

// failedSince returns the newest observation in newer (the commits newer
// than the success, newest first) whose completed check ended
// with failure while its earlier stage ran entry's versions.
func failedSince(st *Stage, newer []Observation, entry manifest.Service) (Observation, bool) {
	for _, o := range newer {
		if o.Check == nil || st.Healthy(o.Check) || o.Stage == nil {
			continue
		}
		if o.Check.Conclusion != "failure" {
			continue // neutral is also a superseded plan's: nothing ran
		}
		if s, ok := o.Stage.Service(entry.Name); ok && SameVersions(entry, s) {
			return o, true
		}
	}
	return Observation{}, false
}

// evidence walks the successful checks from history[0] (a success) back while
// the service keeps the same versions.
func evidence(st *Stage, history []Observation, entry manifest.Service) Evidence {
	ev := Evidence{Commit: history[0].Commit, Check: *history[0].Check, Since: history[0].Check.CompletedAt}
	for _, o := range history[1:] {
		if o.Stage == nil {
			continue
		}
		s, ok := o.Stage.Service(entry.Name)
		if !ok || !SameVersions(entry, s) {
			break
		}
		if st.Healthy(o.Check) && o.Check.CompletedAt.Before(ev.Since) {
			ev.Since = o.Check.CompletedAt
		}
	}
	return ev
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
