package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

var _ sequence.Listener = (*Notifier)(nil)

// SequenceEvent sends a step of an environment's delivery sequence as the
// CloudEvent sh.stagehand.<stage>.<sequence>.started|finished or
// sh.stagehand.<task>.triggered|started|finished, its data in the shape of
// Keptn's shipyard events (sequence.Data). It only queues: it never blocks
// the sequence. A sink without an events filter gets every step, but for
// Slack and Teams, which get them only when their filter names them.
func (n *Notifier) SequenceEvent(_ context.Context, e sequence.Event) {
	ce, err := cloudEvent(e.Name, ofEnvironment(e.Environment), e.Data, e.Time)
	if err != nil {
		n.o.onError("", fmt.Errorf("building event %s of environment %s: %w", e.Name, e.Environment, err))
		return
	}
	d := e.Data
	m := message{name: e.Name, event: ce, sequence: true,
		data: Data{Environment: e.Environment, Revision: d.Revision, PlanHash: d.PlanHash, Approver: d.Approver, Result: d.Result,
			Message: d.Message, Changes: []Change{}}}
	what := d.Stage + " " + d.Sequence + " sequence"
	if e.Task != "" {
		what = "task " + e.Task + " of the " + what
	}
	m.headline = fmt.Sprintf("%s: %s %s", e.Environment, what, e.Kind)
	m.text = fmt.Sprintf("The %s %s at revision %s", what, e.Kind, gitsource.ShortRevision(d.Revision))
	if d.Result != "" {
		m.text += " with result " + d.Result
	}
	m.text += "."
	if d.Message != "" {
		m.text += " " + d.Message
	}
	n.queue(m)
}

// LockData is the data of lock.taken and lock.released.
type LockData struct {
	// Change is taken, released (unlocked) or pruned (expired and removed).
	Change string    `json:"change"`
	Lock   lock.Lock `json:"lock"`
	// Environments are the environments whose lock path the lock is at,
	// under or above.
	Environments []string `json:"environments"`
}

// LockChanged sends a lock taken as lock.taken and one removed as
// lock.released (source stagehand/locks, subject the lock's path). The
// reconciler's own deploy locks, held during each apply, are not sent. It
// only queues: it never blocks the caller.
func (n *Notifier) LockChanged(_ context.Context, c lock.Change) {
	if lock.IsReconcilerAuthor(c.Lock.Author) {
		return
	}
	name := LockTaken
	if c.Kind != lock.Taken {
		name = LockReleased
	}
	envs := n.lockEnvironments(c.Lock.Path)
	at := c.At
	if at.IsZero() {
		at = n.o.now()
	}
	ce, err := cloudEvent(name, origin{source: "stagehand/locks", subject: c.Lock.Path}, LockData{Change: c.Kind, Lock: c.Lock, Environments: envs}, at)
	if err != nil {
		n.o.onError("", fmt.Errorf("building event %s of lock %s: %w", name, c.Lock.Path, err))
		return
	}
	m := message{name: name, event: ce, envs: envs, data: Data{Environment: strings.Join(envs, ", "), Changes: []Change{}}}
	switch c.Kind {
	case lock.Taken:
		m.headline = "Locked: " + c.Lock.Path
		m.text = fmt.Sprintf("%s lock on %s taken by %s until %s.", c.Lock.Type, c.Lock.Path, c.Lock.Author, c.Lock.ExpiresAt.UTC().Format(time.RFC3339))
	case lock.Pruned:
		m.headline = "Lock expired: " + c.Lock.Path
		m.text = fmt.Sprintf("%s lock on %s by %s expired and was removed.", c.Lock.Type, c.Lock.Path, c.Lock.Author)
	default:
		m.headline = "Unlocked: " + c.Lock.Path
		m.text = fmt.Sprintf("%s lock on %s by %s released.", c.Lock.Type, c.Lock.Path, c.Lock.Author)
	}
	if len(envs) > 0 {
		m.text += " Environments: " + strings.Join(envs, ", ") + "."
	}
	n.queue(m)
}

// lockEnvironments are the environments whose lock path is path, under it
// or above it (a lock on a prefix blocks them too).
func (n *Notifier) lockEnvironments(path string) []string {
	var out []string
	for _, env := range sortedEnvs(n.o.lockPaths) {
		lp := n.o.lockPaths[env]
		if lp == "" {
			continue
		}
		if lp == path || strings.HasPrefix(lp, path+"/") || strings.HasPrefix(path, lp+"/") {
			out = append(out, env)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}
