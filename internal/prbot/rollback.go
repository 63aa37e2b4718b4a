package prbot

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// RollbackRequest asks for the rollback pull request of one environment.
type RollbackRequest struct {
	// Env is the environment directory under environments/.
	Env string
	// Revision is the commit of the manifests repository whose versions the
	// environment goes back to (7 to 40 hex digits); "" means the previous
	// state: the newest ancestor of the base branch's head at which the
	// environment resolved to other versions than at the head.
	Revision string
	// Reason is why, for the title and the body. Required.
	Reason string
	// RequestedBy names who asked, for the body.
	RequestedBy string
	// Ran says when the versions at Revision last ran and who approved them
	// then, from the reconciler's history; nil: the newest completed
	// stagehand/<env> check run on Revision says when, and who is unknown.
	Ran *Ran
}

// Ran is one past apply of an environment, from the reconciler's history.
type Ran struct {
	When     time.Time
	Approver string
	// HistoryID is the history entry's id ("" when not known).
	HistoryID string
	// Services are the services as they ran then, from the history entry's
	// resolved manifest: they can differ from git at the revision (an
	// incident rollback's pin was in place), and what ran is what goes
	// back. Their versions, tags and digests take the place of git's at the
	// revision; nil: git's at the revision.
	Services []manifest.Service
}

// RollbackResult is what a rollback did.
type RollbackResult struct {
	Env string `json:"environment"`
	// Revision is the full commit rolled back to.
	Revision string `json:"revision"`
	Branch   string `json:"branch"`
	// Action is opened, updated, unchanged or none (nothing differs).
	Action string `json:"action"`
	PR     int    `json:"pr,omitempty"`
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	Body   string `json:"-"`
	// Changes are the services that go back, each in the file that defines
	// it today.
	Changes []promote.Change `json:"changes"`
	// Skipped says what is not rolled back and why (a service removed since).
	Skipped []string `json:"skipped,omitempty"`
	// Files are the files the pull request edits.
	Files  []string `json:"files,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// RollbackBranch is the head branch of an environment's rollback pull
// request: one per environment, updated in place by the next rollback.
func RollbackBranch(env string) string { return "stagehand/rollback-" + env }

// RollbackEnv returns the environment whose rollback pull request comes
// from branch ("", false for any other branch).
func RollbackEnv(branch string) (string, bool) {
	env, ok := strings.CutPrefix(branch, "stagehand/rollback-")
	return env, ok && env != ""
}

// ErrUnknownRevision is wrapped by the error for a revision the manifests
// repository does not have.
var ErrUnknownRevision = errors.New("unknown revision")

var revisionRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// Rollback opens (or updates in place) the rollback pull request of
// req.Env on RollbackBranch: it resolves the environment at the base
// branch's head and at the revision, and edits only the services whose
// versions differ, each in the file that defines it today (a service whose
// entry lives in an include shared with other environments gets an
// overriding entry in the environment's root manifest instead, as a
// promotion does); everything else in those files stays byte for byte.
// Services added since the revision are left as they are; services removed
// since are not brought back (Skipped says so). When nothing differs, no
// pull request is opened (Action none).
func (b *Bot) Rollback(ctx context.Context, req RollbackRequest) (*RollbackResult, error) {
	return b.rollbacks.rollback(ctx, req)
}

// rollbacks is the rollback flow: an environment's versions put back to
// those of an earlier revision of the base branch in one pull request per
// environment (RollbackBranch), updated in place.
type rollbacks struct {
	repo     *remote.Repository
	branches *remote.Branches
	pulls    *remote.Pulls
	checks   *remote.Checks
	links    promote.Links
	depth    int // commits looked back through for the previous state
}

// rollbackFrom is the environment as it is: the base branch's head, the
// repository there, and the environment resolved in it.
type rollbackFrom struct {
	baseSHA string
	head    *remote.FS
	now     *manifest.Environment
}

// rollback is Rollback.
func (rb *rollbacks) rollback(ctx context.Context, req RollbackRequest) (*RollbackResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	r := rb.repo
	baseSHA, err := r.HeadRef(ctx, r.Base())
	if err != nil {
		return nil, err
	}
	if baseSHA == "" {
		return nil, fmt.Errorf("rolling back %s: base branch %s does not exist", req.Env, r.Base())
	}
	head, err := r.Snapshot(ctx, baseSHA)
	if err != nil {
		return nil, err
	}
	now, err := r.Resolve(ctx, head, req.Env)
	if err != nil {
		return nil, fmt.Errorf("rolling back %s: resolving it at %s: %w", req.Env, baseSHA, err)
	}
	rev, then, err := rb.target(ctx, req, rollbackFrom{baseSHA: baseSHA, head: head, now: now})
	if err != nil {
		return nil, err
	}
	if req.Revision != "" && req.Ran != nil && len(req.Ran.Services) > 0 {
		then = ranAs(then, req.Ran.Services)
	}
	res := &RollbackResult{Env: req.Env, Revision: rev, Branch: RollbackBranch(req.Env), Changes: []promote.Change{}}
	for _, c := range promote.Diff(then, now) {
		if c.New {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: removed from %s since %s; not brought back", c.Service, req.Env, shortSHA(rev)))
			continue
		}
		kept := c.Containers[:0:0]
		for _, ct := range c.Containers {
			if ct.New {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s/%s: container removed since %s; not brought back", c.Service, ct.DockerName, shortSHA(rev)))
				continue
			}
			kept = append(kept, ct)
		}
		c.Containers = kept
		if len(c.Containers) == 0 && c.ToVersion == "" {
			continue
		}
		if c.Override {
			// Overriding a shared entry: the new entry is the old one as a whole.
			c.Entry = overrideEntry(c, now)
		}
		res.Changes = append(res.Changes, c)
	}
	if len(res.Changes) == 0 {
		res.Action = ActionNone
		res.Reason = fmt.Sprintf("%s at %s runs the versions of %s", req.Env, shortSHA(baseSHA), shortSHA(rev))
		return res, nil
	}
	ran := req.Ran
	if ran == nil {
		if ran, err = rb.ranFromCheck(ctx, rev, req.Env); err != nil {
			return nil, err
		}
	}
	edits, err := promotionEdits(head, res.Changes, r.ManifestOptions()...)
	if err != nil {
		return nil, err
	}
	res.Files = slices.Sorted(maps.Keys(edits))
	res.Title = truncateTitle(fmt.Sprintf("Rollback %s to %s: %s", req.Env, shortSHA(rev), oneLine(req.Reason)))
	res.Body = rollbackBody(req, res, ran, rb.links)
	prev, err := rb.pulls.Open(ctx, res.Branch)
	if err != nil {
		return nil, err
	}
	changed, err := rb.branches.Write(ctx, remote.BranchEdit{Branch: res.Branch, BaseSHA: baseSHA, Files: edits, Message: res.Title})
	if err != nil {
		return nil, err
	}
	// A new reason or history entry retitles the pull request: updated too.
	changed = changed || (prev != nil && (prev.GetTitle() != res.Title || prev.GetBody() != res.Body))
	pr, created, err := rb.pulls.Ensure(ctx, res.Branch, res.Title, res.Body)
	if err != nil {
		return nil, err
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
	return res, nil
}

func (r RollbackRequest) validate() error {
	switch {
	case r.Env == "" || strings.ContainsAny(r.Env, "/\\") || r.Env == "." || r.Env == "..":
		return fmt.Errorf("rolling back: environment %q: want a directory name under environments/", r.Env)
	case r.Revision != "" && !revisionRE.MatchString(r.Revision):
		return fmt.Errorf("rolling back %s: revision %q: want a commit SHA of 7 to 40 lowercase hex digits: %w", r.Env, r.Revision, ErrUnknownRevision)
	case strings.TrimSpace(r.Reason) == "":
		return fmt.Errorf("rolling back %s: a reason is required", r.Env)
	}
	return nil
}

// target returns the full revision to go back to and the environment
// resolved there: req.Revision, or the previous state.
func (rb *rollbacks) target(ctx context.Context, req RollbackRequest, from rollbackFrom) (string, *manifest.Environment, error) {
	if req.Revision != "" {
		return rb.revision(ctx, req, from.baseSHA)
	}
	return rb.previous(ctx, req.Env, from)
}

// revision returns req.Revision in full and req.Env resolved there, once it
// is known to be on the base branch (at or behind baseSHA, its head).
func (rb *rollbacks) revision(ctx context.Context, req RollbackRequest, baseSHA string) (string, *manifest.Environment, error) {
	r := rb.repo
	c, err := r.Commit(ctx, req.Revision)
	if remote.IsStatus(err, http.StatusNotFound) || remote.IsStatus(err, http.StatusUnprocessableEntity) {
		return "", nil, fmt.Errorf("rolling back %s: revision %s is not in %s/%s: %w", req.Env, req.Revision, r.Owner(), r.Name(), ErrUnknownRevision)
	}
	if err != nil {
		return "", nil, fmt.Errorf("rolling back %s: reading revision %s: %w", req.Env, req.Revision, err)
	}
	rev := c.GetSHA()
	// Only versions that were on the base branch go back: a commit of
	// another branch never ran there and was never reviewed for it.
	cmp, err := r.Compare(ctx, rev, baseSHA)
	if err != nil {
		return "", nil, fmt.Errorf("rolling back %s: comparing revision %s with %s: %w", req.Env, rev, r.Base(), err)
	}
	if s := cmp.GetStatus(); s != "ahead" && s != "identical" {
		return "", nil, fmt.Errorf("rolling back %s: revision %s is not on %s (it is %s of %s's head %s): %w",
			req.Env, shortSHA(rev), r.Base(), describeStatus(s), r.Base(), shortSHA(baseSHA), ErrUnknownRevision)
	}
	fsys, err := r.Snapshot(ctx, rev)
	if err != nil {
		return "", nil, err
	}
	then, err := r.Resolve(ctx, fsys, req.Env)
	if err != nil {
		return "", nil, fmt.Errorf("rolling back %s: resolving it at %s: %w", req.Env, rev, err)
	}
	return rev, then, nil
}

// previous returns the previous state of env: walking back from the head
// through the commits that touch the environment's files, the first at
// which it resolves to other versions than from.now.
func (rb *rollbacks) previous(ctx context.Context, env string, from rollbackFrom) (string, *manifest.Environment, error) {
	r := rb.repo
	sha, read := from.baseSHA, from.head.Read()
	for range rb.depth {
		touched, parent, err := r.Touches(ctx, sha, read)
		if err != nil {
			return "", nil, err
		}
		if parent == "" {
			break
		}
		sha = parent
		if !touched {
			continue
		}
		fsys, err := r.Snapshot(ctx, sha)
		if err != nil {
			return "", nil, err
		}
		then, err := r.Resolve(ctx, fsys, env)
		if err != nil {
			continue // did not resolve there: no state to go back to
		}
		if len(promote.Diff(then, from.now)) > 0 {
			return sha, then, nil
		}
		read = fsys.Read()
	}
	return "", nil, fmt.Errorf("rolling back %s: no earlier state in the last %d commits of %s: %w", env, rb.depth, r.Base(), ErrUnknownRevision)
}

// ranAs returns then with the versions, tags and digests of the services
// and containers as they ran (ran, from the history), in place of git's.
func ranAs(then *manifest.Environment, ran []manifest.Service) *manifest.Environment {
	out := *then
	out.Services = make([]manifest.Service, len(then.Services))
	for i, s := range then.Services {
		for _, r := range ran {
			if r.Name != s.Name {
				continue
			}
			if r.Version != "" {
				s.Version = r.Version
			}
			s.Containers = append([]manifest.Container(nil), s.Containers...)
			for j, c := range s.Containers {
				for _, rc := range r.Containers {
					if containerName(r.Name, rc) == containerName(s.Name, c) {
						s.Containers[j].DockerTag, s.Containers[j].DockerDigest = rc.DockerTag, rc.DockerDigest
					}
				}
			}
		}
		out.Services[i] = s
	}
	return &out
}

func containerName(service string, c manifest.Container) string {
	if c.DockerName == "" {
		return service
	}
	return c.DockerName
}

// overrideEntry is the entry added to the root manifest to roll back a
// service defined in a shared include: today's entry with the containers
// and version of the change.
func overrideEntry(c promote.Change, now *manifest.Environment) manifest.Service {
	cur, _ := now.Service(c.Service)
	e := manifest.Service{Name: cur.Name, Version: cur.Version}
	if c.ToVersion != "" {
		e.Version = c.ToVersion
	}
	for _, ct := range cur.Containers {
		name := ct.DockerName
		if name == "" {
			name = cur.Name
		}
		for _, ch := range c.Containers {
			if ch.DockerName == name {
				ct.DockerTag, ct.DockerDigest = ch.ToTag, ch.ToDigest
			}
		}
		e.Containers = append(e.Containers, ct)
	}
	return e
}

// ranFromCheck says when the environment last ran rev by the newest
// completed stagehand/<env> check run on it (nil when there is none).
func (rb *rollbacks) ranFromCheck(ctx context.Context, rev, env string) (*Ran, error) {
	check, err := rb.checks.Latest(ctx, rev, promote.CheckName(env))
	if err != nil || check == nil {
		return nil, err
	}
	return &Ran{When: check.CompletedAt}, nil
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// oneLine is s on one line: white space (newlines included) collapsed to
// single spaces, control characters and bidirectional overrides (which make
// a title read otherwise than it is) dropped.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// describeStatus says what a compare status of base...head means for a
// revision (head is the base branch).
func describeStatus(s string) string {
	switch s {
	case "behind":
		return "newer than the head"
	case "diverged":
		return "on another branch, diverged from the head"
	}
	return s + " relative to the head"
}

// NoteRollback writes text as the bot's one "hold" comment on the open
// rollback pull request of env (nothing when none is open), such as who
// released its hold and why.
func (b *Bot) NoteRollback(ctx context.Context, env, text string) error {
	return b.rollbacks.note(ctx, env, text)
}

// note is NoteRollback.
func (rb *rollbacks) note(ctx context.Context, env, text string) error {
	pr, err := rb.pulls.Open(ctx, RollbackBranch(env))
	if err != nil || pr == nil {
		return err
	}
	return rb.pulls.UpsertComment(ctx, pr.GetNumber(), "hold", text)
}
