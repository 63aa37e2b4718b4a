package prbot

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Promotion actions reported in PromoteResult.Action.
const (
	ActionOpened    = "opened"    // a new promotion pull request
	ActionUpdated   = "updated"   // the open one now promotes something else
	ActionUnchanged = "unchanged" // the open one is already right
	ActionClosed    = "closed"    // nothing is left to promote; the open one was closed
	ActionNone      = "none"      // nothing to promote and nothing open
	ActionBlocked   = "blocked"   // a lock or a closed window; nothing opened or merged
	ActionDryRun    = "dry-run"   // what would be done, nothing written
)

// PromoteResult is what one evaluation of a promotion did; its JSON is
// `prbot promote -o json`.
type PromoteResult struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Branch string `json:"branch"`
	Action string `json:"action"`
	PR     int    `json:"pr,omitempty"`
	URL    string `json:"url,omitempty"`
	Merged bool   `json:"merged"`
	// Reason explains a blocked, closed, unmerged or empty promotion.
	Reason   string           `json:"reason,omitempty"`
	Decision promote.Decision `json:"decision"`
	// Files are the files the pull request edits.
	Files []string `json:"files,omitempty"`
	// Title and Body are the pull request's text (also in a dry run).
	Title string `json:"title,omitempty"`
	Body  string `json:"-"`
}

// promote evaluates the promotion from → to of pipeline.yaml on the base
// branch and makes the promotion pull request match: opened or updated in
// place on stagehand/promote-<from>-<to> when services are ready to move,
// closed when nothing is left, left alone with a comment when the later
// stage is locked or outside its window (with no pull request open, a
// neutral check run stagehand/promote-<from>-<to> on the base branch's head
// says why instead). With autoMerge on the stage it is
// merged once its checks are green. dryRun computes everything and writes
// nothing.
func (ps *promotions) promote(ctx context.Context, from, to string, dryRun bool) (*PromoteResult, error) {
	p, err := ps.evaluate(ctx, from, to)
	if err != nil {
		return nil, err
	}
	res := p.result(ps.links)
	d := p.decision
	switch {
	case dryRun:
		res.Action, res.Reason = ActionDryRun, reasonOf(d)
		return res, nil
	case d.Blocked != "":
		res.Action, res.Reason = ActionBlocked, d.Blocked
		if p.pr == nil {
			// Nothing to comment on: say why on the base branch's head.
			return res, ps.checks.Note(ctx, blockedNote(p.baseSHA, p.pair, d.Blocked), true)
		}
		return res, ps.pulls.UpsertComment(ctx, p.pr.GetNumber(), "blocked", fmt.Sprintf("Not updating or merging this promotion: %s.", d.Blocked))
	case len(d.Changes) == 0:
		res.Action, res.Reason = ActionNone, reasonOf(d)
		if p.pr == nil {
			return res, nil
		}
		res.Action = ActionClosed
		return res, ps.close(ctx, p)
	}
	if err := ps.propose(ctx, p, res); err != nil {
		return nil, err
	}
	return res, nil
}

// promotions is the promotion flow: the promotion between two stages of
// pipeline.yaml judged by pkg/promote's gates on the base branch's head
// (the earlier stage's health back through history, the later stage's
// locks and deploy windows), and its single pull request opened, updated,
// closed or merged to match.
type promotions struct {
	repo     *remote.Repository
	branches *remote.Branches
	pulls    *remote.Pulls
	checks   *remote.Checks
	gate     *lockGate
	merge    *merger
	freezes  Freezes // nil: no deploy windows are consulted
	links    promote.Links
	now      func() time.Time
	depth    int // commits of history looked back through (WithHistoryDepth)
}

// promotion is what one evaluation of a promotion read and decided, before
// anything is written.
type promotion struct {
	pair     promote.Pair
	stage    promote.Stage // the later stage
	baseSHA  string        // the base branch's head, the state evaluated
	decision promote.Decision
	edits    map[string][]byte   // new contents of the later stage's files, by path
	pr       *github.PullRequest // the open promotion pull request, nil if none
	scope    lockScope           // the later stage and the services it moves
}

// evaluate reads pipeline.yaml and both stages at the base branch's head,
// the earlier stage's health checks back through history and the later
// stage's locks, and decides what the promotion from → to is.
func (ps *promotions) evaluate(ctx context.Context, from, to string) (*promotion, error) {
	r := ps.repo
	baseSHA, err := r.HeadRef(ctx, r.Base())
	if err != nil {
		return nil, err
	}
	if baseSHA == "" {
		return nil, fmt.Errorf("promoting %s → %s: base branch %s does not exist", from, to, r.Base())
	}
	pl, err := r.Pipeline(ctx, baseSHA)
	if err != nil {
		return nil, err
	}
	if pl == nil {
		return nil, fmt.Errorf("promoting %s → %s: no %s on %s", from, to, r.Path(promote.FileName), r.Base())
	}
	pair, err := pl.Pair(from, to)
	if err != nil {
		return nil, err
	}
	stage, _ := pl.Stage(to)
	p := &promotion{pair: pair, stage: *stage, baseSHA: baseSHA}
	head, err := r.Snapshot(ctx, baseSHA)
	if err != nil {
		return nil, err
	}
	target, err := r.Resolve(ctx, head, to)
	if err != nil {
		return nil, fmt.Errorf("resolving %s at %s: %w", to, baseSHA, err)
	}
	history, err := ps.history(ctx, p, head, target)
	if err != nil {
		return nil, err
	}
	// Locks and holds on the later stage and its targets block any promotion;
	// a service's own lock only a promotion that moves that service.
	p.scope = lockScope{lockPath: stage.LockPath}
	locks, err := ps.gate.blocking(ctx, p.scope)
	if err != nil {
		return nil, err
	}
	in := promote.Input{Pair: pair, Stage: *stage, History: history, Target: target, Locks: locks, Now: ps.now()}
	if ps.freezes != nil {
		// The later stage's deploy windows: a promotion into a frozen stage waits, as its deploy would.
		if in.Frozen, err = ps.freezes.Frozen(ctx, to); err != nil {
			return nil, fmt.Errorf("asking whether %s is frozen: %w", to, err)
		}
	}
	d := promote.Evaluate(in)
	if d.Blocked == "" && len(d.Changes) > 0 {
		for _, c := range d.Changes {
			p.scope.services = append(p.scope.services, c.Service)
		}
		if in.Locks, err = ps.gate.blocking(ctx, p.scope); err != nil {
			return nil, err
		}
		if len(in.Locks) > 0 {
			d = promote.Evaluate(in)
		}
	}
	p.decision = d
	if p.edits, err = promotionEdits(head, d.Changes, r.ManifestOptions()...); err != nil {
		return nil, err
	}
	if p.pr, err = ps.pulls.Open(ctx, pair.Branch()); err != nil {
		return nil, err
	}
	return p, nil
}

// result is the PromoteResult of p before any action: the decision, the
// files and text (with links) of the pull request it calls for and the open one.
func (p *promotion) result(links promote.Links) *PromoteResult {
	res := &PromoteResult{From: p.pair.From, To: p.pair.To, Branch: p.pair.Branch(), Decision: p.decision}
	if len(p.edits) > 0 {
		res.Files = slices.Sorted(maps.Keys(p.edits))
	}
	if len(p.decision.Changes) > 0 {
		res.Title, res.Body = promote.Title(p.decision), promote.Body(p.decision, links)
	}
	if p.pr != nil {
		res.PR, res.URL = p.pr.GetNumber(), p.pr.GetHTMLURL()
	}
	return res
}

// propose writes p's edits to the promotion branch, opens or updates its
// pull request, clears notes of an earlier block and, with autoMerge on the
// later stage, merges once it is ready. It fills in res.
func (ps *promotions) propose(ctx context.Context, p *promotion, res *PromoteResult) error {
	branch := p.pair.Branch()
	changed, err := ps.branches.Write(ctx, remote.BranchEdit{Branch: branch, BaseSHA: p.baseSHA, Files: p.edits, Message: fmt.Sprintf("Promote %s → %s", p.pair.From, p.pair.To)})
	if err != nil {
		return err
	}
	pr, created, err := ps.pulls.Ensure(ctx, branch, res.Title, res.Body)
	if err != nil {
		return err
	}
	res.PR, res.URL = pr.GetNumber(), pr.GetHTMLURL()
	switch {
	case created:
		res.Action = ActionOpened
	case changed:
		res.Action = ActionUpdated
	default:
		res.Action = ActionUnchanged
	}
	// A comment or check run about an earlier block no longer holds.
	if err := ps.pulls.EditComment(ctx, pr.GetNumber(), "blocked", "No lock or window blocks this promotion any more."); err != nil {
		return err
	}
	if err := ps.checks.Note(ctx, clearedNote(p.baseSHA, p.pair), false); err != nil {
		return err
	}
	if !p.stage.AutoMerge {
		return nil
	}
	if pr, err = ps.pulls.Get(ctx, pr.GetNumber()); err != nil {
		return err
	}
	ready, reason, err := ps.merge.readiness(ctx, pr, p.scope)
	if err != nil {
		return err
	}
	if ready {
		res.Merged, reason, err = ps.merge.mergeNow(ctx, pr)
		if err != nil {
			return err
		}
		if res.Merged {
			ps.repo.DeleteBranch(ctx, branch)
		}
	}
	res.Reason = reason
	return nil
}

func reasonOf(d promote.Decision) string {
	if d.Blocked != "" {
		return d.Blocked
	}
	if len(d.Changes) > 0 {
		return ""
	}
	if len(d.Held) == 0 {
		return fmt.Sprintf("%s and %s run the same versions", d.Pair.From, d.Pair.To)
	}
	var parts []string
	for _, h := range d.Held {
		parts = append(parts, h.Service+": "+h.Reason)
	}
	return "nothing ready: " + strings.Join(parts, "; ")
}

// close closes p's pull request, which has nothing left to do.
func (ps *promotions) close(ctx context.Context, p *promotion) error {
	number, pair := p.pr.GetNumber(), p.pair
	if err := ps.pulls.UpsertComment(ctx, number, "closed", fmt.Sprintf("Nothing left to promote from %s to %s (%s); closing.", pair.From, pair.To, reasonOf(p.decision))); err != nil {
		return err
	}
	return ps.pulls.Close(ctx, number, pair.Branch())
}

// history walks the base branch back from its head, reading the newest
// completed stagehand/<from> check run of each commit. The earlier stage is
// resolved at the head and at every commit with a successful check whose
// manifests differ from the last resolved state (other commits carry no
// Stage: nothing is concluded from them, and they cost two API calls each).
// Without requires.healthy only the head counts. The walk stops at the
// history depth, at a commit whose stage does not resolve, or once a
// success was found and an older success no longer runs the versions it
// would promote (so soak times count from their first success).
func (ps *promotions) history(ctx context.Context, p *promotion, head *remote.FS, target *manifest.Environment) ([]promote.Observation, error) {
	baseSHA, pair, stage := p.baseSHA, p.pair, p.stage
	src, err := ps.repo.Resolve(ctx, head, pair.From)
	if err != nil {
		return nil, fmt.Errorf("resolving %s at %s: %w", pair.From, baseSHA, err)
	}
	if !stage.Requires.Healthy {
		return []promote.Observation{{Commit: baseSHA, Stage: src}}, nil
	}
	var (
		out     []promote.Observation
		sha     = baseSHA
		dirty   bool // manifests changed between src's commit and sha
		changes []promote.Change
		read    = head // the snapshot src was resolved from
	)
	for len(out) < ps.depth {
		check, err := ps.checks.Latest(ctx, sha, promote.CheckName(pair.From))
		if err != nil {
			return nil, err
		}
		obs := promote.Observation{Commit: sha, Check: check}
		healthy := stage.Healthy(check)
		if dirty && healthy {
			fsys, err := ps.repo.Snapshot(ctx, sha)
			if err != nil {
				return nil, err
			}
			older, err := ps.repo.Resolve(ctx, fsys, pair.From)
			if err != nil {
				break // an invalid older state ends the evidence
			}
			src, dirty, read = older, false, fsys
		}
		if !dirty {
			obs.Stage = src
		}
		out = append(out, obs)
		if healthy && changes == nil {
			changes = promote.Diff(src, target)
			if len(changes) == 0 {
				break
			}
		} else if healthy && !anyStillRuns(changes, src) {
			break
		}
		touched, parent, err := ps.repo.Touches(ctx, sha, read.Read())
		if err != nil {
			return nil, err
		}
		if parent == "" {
			break
		}
		dirty = dirty || touched
		sha = parent
	}
	return out, nil
}

// anyStillRuns reports whether env still runs the promoted version of some change.
func anyStillRuns(changes []promote.Change, env *manifest.Environment) bool {
	for _, c := range changes {
		if s, ok := env.Service(c.Service); ok && promote.SameVersions(c.Entry, s) {
			return true
		}
	}
	return false
}

// promotionEdits applies the changes to the later stage's files as they are
// in fsys (parsed with opts) and returns the new contents of each file that
// changes.
func promotionEdits(fsys fs.FS, changes []promote.Change, opts ...manifest.Option) (map[string][]byte, error) {
	eds := map[string]*manifest.Editor{}
	for _, c := range changes {
		ed, ok := eds[c.File]
		if !ok {
			data, err := fs.ReadFile(fsys, c.File)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", c.File, err)
			}
			ed, err = manifest.Edit(c.File, data, opts...)
			if err != nil {
				return nil, fmt.Errorf("editing %s: %w", c.File, err)
			}
			eds[c.File] = ed
		}
		if err := applyChange(ed, c); err != nil {
			return nil, fmt.Errorf("promoting %s into %s: %w", c.Service, c.File, err)
		}
	}
	out := map[string][]byte{}
	for f, ed := range eds {
		if ed.Changed() {
			out[f] = ed.Bytes()
		}
	}
	return out, nil
}

func applyChange(ed *manifest.Editor, c promote.Change) error {
	if c.New || c.Override {
		entry := manifest.Service{Name: c.Entry.Name, Version: c.Entry.Version}
		for _, ct := range c.Entry.Containers {
			entry.Containers = append(entry.Containers, fileContainer(c.Service, ct))
		}
		return ed.AddService(entry)
	}
	for _, ct := range c.Containers {
		var err error
		if ct.New {
			err = ed.AddContainer(c.Service, fileContainer(c.Service, manifest.Container{DockerName: ct.DockerName, DockerTag: ct.ToTag, DockerDigest: ct.ToDigest}))
		} else {
			err = ed.SetImage(c.Service, ct.DockerName, ct.ToTag, ct.ToDigest)
		}
		if err != nil {
			return err
		}
	}
	if c.ToVersion != "" {
		return ed.SetVersion(c.Service, c.ToVersion)
	}
	return nil
}

// fileContainer leaves a dockerName equal to the service name out of the file.
func fileContainer(service string, c manifest.Container) manifest.Container {
	if c.DockerName == service {
		c.DockerName = ""
	}
	return c
}
