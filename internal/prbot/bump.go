package prbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// BumpRequest is one upstream build to deploy into an environment.
type BumpRequest struct {
	// Env is the environment directory under environments/.
	Env string
	// File is the owned file's base name, e.g. "checkout-api.json".
	File      string
	Service   string
	Container string // dockerName; "" means the service name
	Tag       string
	Digest    string // "" removes a digest the file had
	// AutoMerge merges the pull request once its checks are green and no
	// lock blocks the environment, waiting at most MergeTimeout.
	AutoMerge    bool
	MergeTimeout time.Duration
}

// BumpResult is what a bump did; its JSON is `prbot bump -o json`.
type BumpResult struct {
	File   string `json:"file"`
	Branch string `json:"branch"`
	// PR and URL identify the pull request (0 and "" when none is open).
	PR  int    `json:"pr"`
	URL string `json:"url"`
	// Commit is the commit written by this run ("" when nothing changed).
	Commit  string `json:"commit,omitempty"`
	Changed bool   `json:"changed"`
	Created bool   `json:"created"`
	Merged  bool   `json:"merged"`
	// Blocked is set when a lock or a rollback hold on the environment, its
	// targets or the service stopped the bump: nothing was written.
	Blocked bool `json:"blocked,omitempty"`
	// Reason says why nothing changed, why the bump was blocked or why the
	// pull request was not merged.
	Reason string `json:"reason,omitempty"`
}

// BumpBranch is the head branch of the bump pull request for an environment's file.
func BumpBranch(env, file string) string {
	return "stagehand/bump-" + env + "-" + strings.TrimSuffix(file, ".json")
}

const maxWriteAttempts = 8

var fileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.json$`)

// bumper is the bump flow: one upstream build's image written into an
// environment's file on the bump branch, the branch's pull request opened
// or updated in place, a lock or hold that stops it reported, and the pull
// request merged when AutoMerge asks.
type bumper struct {
	repo     *remote.Repository
	branches *remote.Branches
	pulls    *remote.Pulls
	checks   *remote.Checks
	gate     *lockGate
	merge    *merger
}

// bumpRun is one bump on its way: the request, where it writes, what it
// found and what it did so far.
type bumpRun struct {
	req     BumpRequest
	file    string              // the file's path in the repository
	branch  string              // BumpBranch(req.Env, req.File)
	baseSHA string              // the base branch's head
	pr      *github.PullRequest // open when the bump began, nil if none
	res     *BumpResult
}

// bump edits the service's container in environments/<env>/<file> on the
// bump branch and opens the pull request for it, or updates the open one in
// place. Running the same bump again changes nothing. Concurrent bumps of one
// file converge on one pull request; a tag that is older (by SemVer) than the
// one already on the branch does not replace it, so racing bumps end with the
// newest.
func (bm *bumper) bump(ctx context.Context, req BumpRequest) (*BumpResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	run := &bumpRun{req: req, file: bm.repo.Path(path.Join("environments", req.Env, req.File)), branch: BumpBranch(req.Env, req.File)}
	res := &BumpResult{File: run.file, Branch: run.branch}
	run.res = res

	var err error
	if run.baseSHA, err = bm.repo.HeadRef(ctx, bm.repo.Base()); err != nil {
		return nil, err
	}
	if run.baseSHA == "" {
		return nil, fmt.Errorf("bumping %s: base branch %s does not exist", run.file, bm.repo.Base())
	}
	if run.pr, err = bm.pulls.Open(ctx, run.branch); err != nil {
		return nil, err
	}
	// A lock or hold on the stage, a target or the service: nothing is
	// opened, updated or merged, and the bot says why.
	lockPath, err := bm.gate.stageLockPath(ctx, req.Env)
	if err != nil {
		return nil, err
	}
	scope := lockScope{lockPath: lockPath, services: []string{req.Service}}
	locks, err := bm.gate.blocking(ctx, scope)
	if err != nil {
		return nil, err
	}
	if len(locks) > 0 {
		return bm.blocked(ctx, run, locks)
	}
	if err := bm.prepareBranch(ctx, run); err != nil {
		return nil, err
	}

	if res.Commit, res.Reason, err = bm.write(ctx, run); err != nil {
		return nil, err
	}
	res.Changed = res.Commit != ""

	title, body, err := bm.text(ctx, run)
	if err != nil {
		return nil, err
	}
	if title == "" {
		// The branch does not differ from the base: nothing to propose.
		if res.Reason == "" {
			res.Reason = fmt.Sprintf("%s on %s already has %s", run.file, bm.repo.Base(), req.Tag)
		}
		return res, nil
	}
	pr, created, err := bm.pulls.Ensure(ctx, run.branch, title, body)
	if err != nil {
		return nil, err
	}
	res.PR, res.URL, res.Created = pr.GetNumber(), pr.GetHTMLURL(), created
	if err := bm.clearBlocked(ctx, run); err != nil {
		return res, err
	}
	if !req.AutoMerge {
		return res, nil
	}
	merged, reason, err := bm.merge.whenReady(ctx, pr.GetNumber(), scope, req.MergeTimeout)
	res.Merged, res.Reason = merged, reason
	if merged {
		bm.repo.DeleteBranch(ctx, run.branch)
	}
	return res, err
}

// blocked reports a bump that locks stop: on the open pull request as a
// comment, else as a neutral check run named like the branch on the base
// branch's head.
func (bm *bumper) blocked(ctx context.Context, run *bumpRun, locks []string) (*BumpResult, error) {
	req, res := run.req, run.res
	res.Blocked = true
	res.Reason = "blocked: " + strings.Join(locks, "; ")
	if run.pr != nil {
		res.PR, res.URL = run.pr.GetNumber(), run.pr.GetHTMLURL()
		return res, bm.pulls.UpsertComment(ctx, run.pr.GetNumber(), "blocked", fmt.Sprintf("Not updating or merging this bump of %s to %s: %s", containerLabel(req), req.Tag, res.Reason))
	}
	summary := fmt.Sprintf("Not opening a bump of %s to %s in %s: %s", containerLabel(req), req.Tag, req.Env, res.Reason)
	return res, bm.checks.Note(ctx, remote.Note{SHA: run.baseSHA, Name: res.Branch, Title: blockedBumpTitle, Summary: summary}, true)
}

// clearBlocked rewrites an earlier note of a blocked bump, on the pull
// request (run.res.PR) or the base branch's head, once the bump went
// through. A pull request just created has no comments yet.
func (bm *bumper) clearBlocked(ctx context.Context, run *bumpRun) error {
	const text = "No lock or hold blocks this bump any more."
	if !run.res.Created {
		if err := bm.pulls.EditComment(ctx, run.res.PR, "blocked", text); err != nil {
			return err
		}
	}
	return bm.checks.Note(ctx, remote.Note{SHA: run.baseSHA, Name: run.branch, Title: clearedBumpTitle, Summary: text}, false)
}

// write applies run's request to its file on its branch and commits it,
// re-reading and re-applying when another bump wrote the file first. It
// returns the new commit, or "" and the reason when the file already says
// what the request says (or something newer).
func (bm *bumper) write(ctx context.Context, run *bumpRun) (commit, reason string, err error) {
	req := run.req
	for attempt := 1; ; attempt++ {
		data, sha, err := bm.repo.File(ctx, run.file, run.branch)
		if err != nil {
			return "", "", err
		}
		if data == nil {
			return "", "", fmt.Errorf("bumping %s: the file does not exist on %s; create it (and include it from environments/%s/manifest.json) first", run.file, bm.repo.Base(), req.Env)
		}
		out, reason, err := applyBump(run.file, data, req, bm.repo.ManifestOptions()...)
		if err != nil || out == nil {
			return "", reason, err
		}
		msg := fmt.Sprintf("Bump %s to %s in %s", containerLabel(req), req.Tag, req.Env)
		commit, err := bm.branches.Put(ctx, remote.FileEdit{Branch: run.branch, Path: run.file, Message: msg, Content: out}, sha)
		if errors.Is(err, ErrConflict) && attempt < maxWriteAttempts {
			// Another bump wrote first: read its result and apply ours on top.
			if err := sleep(ctx, time.Duration(attempt*attempt)*50*time.Millisecond); err != nil {
				return "", "", err
			}
			continue
		}
		if err != nil {
			return "", "", err
		}
		return commit, "", nil
	}
}

func (r BumpRequest) validate() error { return r.validateFields(true) }

// validateFields checks the request; withFile checks File too.
func (r BumpRequest) validateFields(withFile bool) error {
	switch {
	case r.Env == "" || strings.ContainsAny(r.Env, "/\\") || r.Env == "." || r.Env == "..":
		return fmt.Errorf("bumping: environment %q: want a directory name under environments/", r.Env)
	case withFile && !fileNameRE.MatchString(r.File):
		return fmt.Errorf("bumping: file %q: want a base name ending in .json, e.g. checkout-api.json", r.File)
	case r.Service == "":
		return errors.New("bumping: no service")
	case r.Tag == "":
		return errors.New("bumping: no tag")
	}
	if err := manifest.CheckImage(r.Tag, r.Digest); err != nil {
		if r.File != "" {
			return fmt.Errorf("bumping %s in %s: %w", containerLabel(r), path.Join("environments", r.Env, r.File), err)
		}
		return fmt.Errorf("bumping %s: %w", containerLabel(r), err)
	}
	return nil
}

func containerLabel(req BumpRequest) string {
	if req.Container == "" || req.Container == req.Service {
		return req.Service
	}
	return req.Service + "/" + req.Container
}

// prepareBranch makes sure the bump branch exists and is not left over from
// an earlier, finished pull request.
func (bm *bumper) prepareBranch(ctx context.Context, run *bumpRun) error {
	r := bm.repo
	head, err := r.HeadRef(ctx, run.branch)
	if err != nil {
		return err
	}
	if head == "" {
		_, err := r.CreateRef(ctx, run.branch, run.baseSHA)
		return err
	}
	cmp, err := r.Compare(ctx, run.baseSHA, head)
	if err != nil {
		return fmt.Errorf("comparing %s with %s: %w", run.branch, r.Base(), err)
	}
	if run.pr != nil {
		return bm.keepMergeable(ctx, run, cmp.GetMergeBaseCommit().GetSHA())
	}
	switch cmp.GetStatus() {
	case "identical":
		return nil
	case "behind":
		// Merged already: fast-forward to the base. A concurrent bump that
		// moved the branch in between wins; build on its commit.
		if err := r.SetRef(ctx, run.branch, run.baseSHA, false); err != nil && !remote.IsStatus(err, http.StatusUnprocessableEntity) {
			return err
		}
		return nil
	}
	// "ahead" or "diverged": a pull request closed (unmerged, or squashed)
	// left its commits: start over from the base. Otherwise another bump is
	// writing right now: build on it.
	closed, err := bm.pulls.List(ctx, run.branch, "closed")
	if err != nil {
		return err
	}
	for _, pr := range closed {
		if pr.GetHead().GetSHA() == head {
			return r.SetRef(ctx, run.branch, run.baseSHA, true)
		}
	}
	return nil
}

// keepMergeable rebuilds an open bump branch on the base when the base
// changed the file since the branch left it at mergeBase (a manual edit):
// the bumps the branch holds are re-applied on top of the base's file, so
// the pull request stays mergeable and keeps every bump.
func (bm *bumper) keepMergeable(ctx context.Context, run *bumpRun, mergeBase string) error {
	r, file := bm.repo, run.file
	if mergeBase == "" || mergeBase == run.baseSHA {
		return nil
	}
	old, _, err := r.File(ctx, file, mergeBase)
	if err != nil {
		return err
	}
	base, _, err := r.File(ctx, file, run.baseSHA)
	if err != nil {
		return err
	}
	if bytes.Equal(old, base) || base == nil {
		return nil
	}
	cur, _, err := r.File(ctx, file, run.branch)
	if err != nil {
		return err
	}
	before, after := containersOf(file, old), containersOf(file, cur)
	data := base
	for _, k := range after.order {
		c := after.m[k]
		if before.m[k] == c {
			continue
		}
		out, _, err := applyBump(file, data, BumpRequest{Service: k.service, Container: k.container, Tag: c.DockerTag, Digest: c.DockerDigest}, r.ManifestOptions()...)
		if err != nil {
			return fmt.Errorf("re-applying %s on %s: %w", k.label(), r.Base(), err)
		}
		if out != nil {
			data = out
		}
	}
	if err := r.SetRef(ctx, run.branch, run.baseSHA, true); err != nil {
		return err
	}
	if bytes.Equal(data, base) {
		return nil
	}
	_, err = bm.branches.Ensure(ctx, remote.FileEdit{Branch: run.branch, Path: file, Message: fmt.Sprintf("Re-apply bumps of %s on top of %s", path.Base(file), r.Base()), Content: data})
	return err
}

// applyBump edits data (parsed with opts); nil output means nothing to
// write, with the reason.
func applyBump(file string, data []byte, req BumpRequest, opts ...manifest.Option) ([]byte, string, error) {
	ed, err := manifest.Edit(file, data, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("bumping %s: %w", file, err)
	}
	cur, err := ed.Container(req.Service, req.Container)
	switch {
	case errors.Is(err, manifest.ErrNotFound) && !slices.Contains(ed.Services(), req.Service):
		err = ed.AddService(manifest.Service{Name: req.Service, Containers: []manifest.Container{{DockerName: dockerNameOrEmpty(req), DockerTag: req.Tag, DockerDigest: req.Digest}}})
	case errors.Is(err, manifest.ErrNotFound):
		err = ed.AddContainer(req.Service, manifest.Container{DockerName: dockerNameOrEmpty(req), DockerTag: req.Tag, DockerDigest: req.Digest})
	case err != nil:
	case newerTag(cur.DockerTag, req.Tag):
		return nil, fmt.Sprintf("%s already has %s %s, newer than %s", file, containerLabel(req), cur.DockerTag, req.Tag), nil
	default:
		err = ed.SetImage(req.Service, req.Container, req.Tag, req.Digest)
	}
	if err != nil {
		return nil, "", fmt.Errorf("bumping %s: %w", file, err)
	}
	if !ed.Changed() {
		return nil, fmt.Sprintf("%s already has %s %s", file, containerLabel(req), req.Tag), nil
	}
	return ed.Bytes(), "", nil
}

func dockerNameOrEmpty(req BumpRequest) string {
	if req.Container == req.Service {
		return ""
	}
	return req.Container
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
