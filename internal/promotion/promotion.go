package promotion

import (
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// Stage is what the reconciler knows of one stage.
type Stage struct {
	// Head is the stage resolved at Revision, the newest revision fetched
	// (nil when it did not resolve).
	Head     *manifest.Environment
	Revision string
	// History is the stage's history, newest first, with the resolved
	// manifest of each entry (approval.Entry.Manifest).
	History []approval.Entry
	// Locks are the unexpired locks at, under and above its lock path.
	Locks []lock.Lock
}

// Wait is what the promotion between two adjacent stages waits for.
type Wait = status.Promotion

// StageFunc returns what the reconciler knows of the stage named; ok is
// false for a stage it does not work (no such environment).
type StageFunc func(name string) (Stage, bool)

// Waits is what each promotion of pl waits for, in stage order, as
// promote.Evaluate decides it at now.
func Waits(pl *promote.Pipeline, stage StageFunc, now time.Time) []Wait {
	if pl == nil {
		return nil
	}
	var out []Wait
	for _, pair := range pl.Pairs() {
		out = append(out, wait(pl, pair, stage, now))
	}
	return out
}

func wait(pl *promote.Pipeline, pair promote.Pair, stage StageFunc, now time.Time) Wait {
	w := Wait{From: pair.From, To: pair.To}
	from, okFrom := stage(pair.From)
	to, okTo := stage(pair.To)
	switch {
	case !okFrom || !okTo:
		w.Says = "unknown: this reconciler does not work both stages"
		return w
	case from.Head == nil:
		w.Says = "unknown: " + pair.From + " does not resolve at the newest revision"
		return w
	case to.Head == nil:
		w.Says = "unknown: " + pair.To + " does not resolve at the newest revision"
		return w
	}
	st, _ := pl.Stage(pair.To)
	d := promote.Evaluate(promote.Input{Pair: pair, Stage: *st, History: Observations(from), Target: to.Head,
		Locks: blocking(to.Locks, now), Now: now})
	return says(w, d)
}

// says words d.
func says(w Wait, d promote.Decision) Wait {
	var parts []string
	if d.Blocked != "" {
		parts = append(parts, "blocked: "+d.Blocked)
	} else {
		for _, c := range d.Changes {
			w.Ready = append(w.Ready, c.Service)
		}
		if len(w.Ready) > 0 {
			parts = append(parts, "ready: "+strings.Join(w.Ready, ", "))
		}
	}
	for _, h := range d.Held {
		s := h.Service + " " + h.Reason
		if !h.Until.IsZero() {
			s += " (until " + h.Until.UTC().Format(time.RFC3339) + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		parts = append(parts, "in step: "+w.To+" runs what "+w.From+" runs")
	}
	w.Says = strings.Join(parts, "; ")
	return w
}

// blocking are the messages of the locks that stop a promotion: those
// forbidding a deploy or automation (a bot's pull request is both).
func blocking(locks []lock.Lock, now time.Time) []string {
	var out []string
	for _, l := range locks {
		if l.Blocks(lock.Deploy, now) || l.Blocks(lock.Automation, now) {
			out = append(out, l.BlockingMessage(time.UTC))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Observations is the earlier stage's evidence as promote.Evaluate reads
// the base branch's commits, newest first: its head (the stage resolved at
// the newest revision, with the check of its deploy there, if any), then
// each deploy of its history with the manifest it deployed and its result
// as the stagehand/<env> check run reports it.
func Observations(s Stage) []promote.Observation {
	head := promote.Observation{Commit: s.Revision, Stage: s.Head}
	var out []promote.Observation
	for _, e := range s.History {
		c, ok := check(e)
		if !ok {
			continue
		}
		if e.Revision == s.Revision {
			if head.Check == nil {
				head.Check = c
			}
			continue
		}
		o := promote.Observation{Commit: e.Revision, Check: c}
		if e.Manifest != nil {
			o.Stage = &manifest.Environment{Root: e.Manifest.Root, Services: e.Manifest.Services}
		}
		out = append(out, o)
	}
	return append([]promote.Observation{head}, out...)
}

// check is the stagehand/<env> check run e's deploy completed: success
// (warning when a verification task warned), failure; ok is false for an
// entry that deployed nothing (rejected, interrupted).
func check(e approval.Entry) (*promote.Check, bool) {
	c := &promote.Check{ID: e.ID, CompletedAt: e.Finished}
	switch e.Result {
	case approval.ResultSucceeded:
		c.Conclusion, c.Result = "success", promote.ResultPass
		if slices.ContainsFunc(e.Verification, func(r verify.TaskResult) bool { return r.Result == verify.Warning }) {
			c.Conclusion, c.Result = "neutral", promote.ResultWarning
		}
	case approval.ResultFailed, approval.ResultRolledBack:
		c.Conclusion, c.Result = "failure", promote.ResultFail
	default:
		return nil, false
	}
	return c, true
}
