package prbot

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/google/go-github/v60/github"

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
func (b *Bot) promote(ctx context.Context, from, to string, dryRun bool) (*PromoteResult, error) {
	p, err := b.evaluatePromotion(ctx, from, to)
	if err != nil {
		return nil, err
	}
	res := p.result(b.links)
	d := p.decision
	switch {
	case dryRun:
		res.Action, res.Reason = ActionDryRun, reasonOf(d)
		return res, nil
	case d.Blocked != "":
		res.Action, res.Reason = ActionBlocked, d.Blocked
		if p.pr == nil {
			// Nothing to comment on: say why on the base branch's head.
			return res, b.reportBlocked(ctx, p.baseSHA, p.pair, d.Blocked)
		}
		return res, b.upsertComment(ctx, p.pr.GetNumber(), "blocked", fmt.Sprintf("Not updating or merging this promotion: %s.", d.Blocked))
	case len(d.Changes) == 0:
		res.Action, res.Reason = ActionNone, reasonOf(d)
		if p.pr == nil {
			return res, nil
		}
		res.Action = ActionClosed
		return res, b.closePromotion(ctx, p.pr, p.pair, d)
	}
	if err := b.proposePromotion(ctx, p, res); err != nil {
		return nil, err
	}
	return res, nil
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

// evaluatePromotion reads pipeline.yaml and both stages at the base
// branch's head, the earlier stage's health checks back through history and
// the later stage's locks, and decides what the promotion from → to is.
func (b *Bot) evaluatePromotion(ctx context.Context, from, to string) (*promotion, error) {
	baseSHA, err := b.headRef(ctx, b.base)
	if err != nil {
		return nil, err
	}
	if baseSHA == "" {
		return nil, fmt.Errorf("promoting %s → %s: base branch %s does not exist", from, to, b.base)
	}
	pl, err := b.pipeline(ctx, baseSHA)
	if err != nil {
		return nil, err
	}
	if pl == nil {
		return nil, fmt.Errorf("promoting %s → %s: no %s on %s", from, to, b.path(promote.FileName), b.base)
	}
	pair, err := pl.Pair(from, to)
	if err != nil {
		return nil, err
	}
	stage, _ := pl.Stage(to)
	head, err := b.snapshot(ctx, baseSHA)
	if err != nil {
		return nil, err
	}
	target, err := manifest.Resolve(ctx, head, b.root, to, b.manifestOpts...)
	if err != nil {
		return nil, fmt.Errorf("resolving %s at %s: %w", to, baseSHA, err)
	}
	history, err := b.history(ctx, baseSHA, head, pair, *stage, target)
	if err != nil {
		return nil, err
	}
	// Locks and holds on the later stage and its targets block any promotion;
	// a service's own lock only a promotion that moves that service.
	scope := lockScope{lockPath: stage.LockPath}
	locks, err := b.scopeLocks(ctx, scope)
	if err != nil {
		return nil, err
	}
	in := promote.Input{Pair: pair, Stage: *stage, History: history, Target: target, Locks: locks, Now: b.now()}
	if b.freezes != nil {
		// The later stage's deploy windows: a promotion into a frozen stage waits, as its deploy would.
		if in.Frozen, err = b.freezes.Frozen(ctx, to); err != nil {
			return nil, fmt.Errorf("asking whether %s is frozen: %w", to, err)
		}
	}
	d := promote.Evaluate(in)
	if d.Blocked == "" && len(d.Changes) > 0 {
		for _, c := range d.Changes {
			scope.services = append(scope.services, c.Service)
		}
		if in.Locks, err = b.scopeLocks(ctx, scope); err != nil {
			return nil, err
		}
		if len(in.Locks) > 0 {
			d = promote.Evaluate(in)
		}
	}
	edits, err := promotionEdits(head, d.Changes, b.manifestOpts...)
	if err != nil {
		return nil, err
	}
	pr, err := b.openPull(ctx, pair.Branch())
	if err != nil {
		return nil, err
	}
	return &promotion{pair: pair, stage: *stage, baseSHA: baseSHA, decision: d, edits: edits, pr: pr, scope: scope}, nil
}

// result is the PromoteResult of p before any action: the decision, the
// files and text (with links) of the pull request it calls for and the open one.
func (p *promotion) result(links promote.Links) *PromoteResult {
	res := &PromoteResult{From: p.pair.From, To: p.pair.To, Branch: p.pair.Branch(), Decision: p.decision}
	if len(p.edits) > 0 {
		res.Files = sortedKeys(p.edits)
	}
	if len(p.decision.Changes) > 0 {
		res.Title, res.Body = promote.Title(p.decision), promote.Body(p.decision, links)
	}
	if p.pr != nil {
		res.PR, res.URL = p.pr.GetNumber(), p.pr.GetHTMLURL()
	}
	return res
}

// proposePromotion writes p's edits to the promotion branch, opens or
// updates its pull request, clears notes of an earlier block and, with
// autoMerge on the later stage, merges once it is ready. It fills in res.
func (b *Bot) proposePromotion(ctx context.Context, p *promotion, res *PromoteResult) error {
	branch := p.pair.Branch()
	changed, err := b.writeBranch(ctx, branch, p.baseSHA, p.edits, fmt.Sprintf("Promote %s → %s", p.pair.From, p.pair.To))
	if err != nil {
		return err
	}
	pr, created, err := b.ensurePull(ctx, branch, res.Title, res.Body)
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
	if err := b.editComment(ctx, pr.GetNumber(), "blocked", "No lock or window blocks this promotion any more."); err != nil {
		return err
	}
	if err := b.clearBlocked(ctx, p.baseSHA, p.pair); err != nil {
		return err
	}
	if !p.stage.AutoMerge {
		return nil
	}
	pr, _, err = b.gh.PullRequests.Get(ctx, b.owner, b.repo, pr.GetNumber())
	if err != nil {
		return fmt.Errorf("reading pull request #%d: %w", res.PR, err)
	}
	ready, reason, err := b.readiness(ctx, pr, p.scope)
	if err != nil {
		return err
	}
	if ready {
		res.Merged, reason, err = b.mergeNow(ctx, pr)
		if err != nil {
			return err
		}
		if res.Merged {
			b.deleteBranch(ctx, branch)
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

// closePromotion closes a promotion pull request that has nothing left to do.
func (b *Bot) closePromotion(ctx context.Context, pr *github.PullRequest, pair promote.Pair, d promote.Decision) error {
	if err := b.upsertComment(ctx, pr.GetNumber(), "closed", fmt.Sprintf("Nothing left to promote from %s to %s (%s); closing.", pair.From, pair.To, reasonOf(d))); err != nil {
		return err
	}
	if _, _, err := b.gh.PullRequests.Edit(ctx, b.owner, b.repo, pr.GetNumber(), &github.PullRequest{State: github.String("closed")}); err != nil {
		return fmt.Errorf("closing pull request #%d: %w", pr.GetNumber(), err)
	}
	b.deleteBranch(ctx, pair.Branch())
	return nil
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
func (b *Bot) history(ctx context.Context, baseSHA string, head *repoFS, pair promote.Pair, stage promote.Stage, target *manifest.Environment) ([]promote.Observation, error) {
	src, err := manifest.Resolve(ctx, head, b.root, pair.From, b.manifestOpts...)
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
	for len(out) < b.depth {
		check, err := b.latestCheck(ctx, sha, promote.CheckName(pair.From))
		if err != nil {
			return nil, err
		}
		obs := promote.Observation{Commit: sha, Check: check}
		healthy := stage.Healthy(check)
		if dirty && healthy {
			fsys, err := b.snapshot(ctx, sha)
			if err != nil {
				return nil, err
			}
			older, err := manifest.Resolve(ctx, fsys, b.root, pair.From, b.manifestOpts...)
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
		touched, parent, err := b.touches(ctx, sha, read.read())
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

// latestCheck returns the newest completed check run called name on sha (nil if none).
func (b *Bot) latestCheck(ctx context.Context, sha, name string) (*promote.Check, error) {
	runs, _, err := b.gh.Checks.ListCheckRunsForRef(ctx, b.owner, b.repo, sha, &github.ListCheckRunsOptions{
		CheckName: github.String(name), Status: github.String("completed"), Filter: github.String("latest"),
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s check runs of %s: %w", name, sha, err)
	}
	for _, r := range runs.CheckRuns {
		if r.GetName() != name || r.GetStatus() != "completed" {
			continue
		}
		return &promote.Check{ID: r.GetID(), Conclusion: r.GetConclusion(), Result: promote.CheckResult(r.GetConclusion(), r.GetOutput().GetTitle()),
			URL: r.GetHTMLURL(), CompletedAt: r.GetCompletedAt().Time}, nil
	}
	return nil, nil
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
