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

// bump edits the service's container in environments/<env>/<file> on the
// bump branch and opens the pull request for it, or updates the open one in
// place. Running the same bump again changes nothing. Concurrent bumps of one
// file converge on one pull request; a tag that is older (by SemVer) than the
// one already on the branch does not replace it, so racing bumps end with the
// newest.
func (b *Bot) bump(ctx context.Context, req BumpRequest) (*BumpResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	file := b.path(path.Join("environments", req.Env, req.File))
	branch := BumpBranch(req.Env, req.File)
	res := &BumpResult{File: file, Branch: branch}

	baseSHA, err := b.headRef(ctx, b.base)
	if err != nil {
		return nil, err
	}
	if baseSHA == "" {
		return nil, fmt.Errorf("bumping %s: base branch %s does not exist", file, b.base)
	}
	pr, err := b.openPull(ctx, branch)
	if err != nil {
		return nil, err
	}
	// A lock or hold on the stage, a target or the service: nothing is
	// opened, updated or merged, and the bot says why.
	lockPath, err := b.stageLockPath(ctx, req.Env)
	if err != nil {
		return nil, err
	}
	scope := lockScope{lockPath: lockPath, services: []string{req.Service}}
	locks, err := b.scopeLocks(ctx, scope)
	if err != nil {
		return nil, err
	}
	if len(locks) > 0 {
		return b.blockedBump(ctx, res, pr, baseSHA, req, locks)
	}
	if err := b.prepareBranch(ctx, branch, baseSHA, file, pr != nil); err != nil {
		return nil, err
	}

	if res.Commit, res.Reason, err = b.writeBump(ctx, file, branch, req); err != nil {
		return nil, err
	}
	res.Changed = res.Commit != ""

	title, body, err := b.bumpText(ctx, file, req.Env, branch)
	if err != nil {
		return nil, err
	}
	if title == "" {
		// The branch does not differ from the base: nothing to propose.
		if res.Reason == "" {
			res.Reason = fmt.Sprintf("%s on %s already has %s", file, b.base, req.Tag)
		}
		return res, nil
	}
	pr, created, err := b.ensurePull(ctx, branch, title, body)
	if err != nil {
		return nil, err
	}
	res.PR, res.URL, res.Created = pr.GetNumber(), pr.GetHTMLURL(), created
	if err := b.clearBlockedBump(ctx, pr.GetNumber(), baseSHA, branch, created); err != nil {
		return res, err
	}
	if !req.AutoMerge {
		return res, nil
	}
	merged, reason, err := b.mergeWhenReady(ctx, pr.GetNumber(), scope, req.MergeTimeout)
	res.Merged, res.Reason = merged, reason
	if merged {
		b.deleteBranch(ctx, branch)
	}
	return res, err
}

// blockedBump reports a bump that locks stop: on the open pull request as a
// comment, else as a neutral check run named like the branch on the base
// branch's head.
func (b *Bot) blockedBump(ctx context.Context, res *BumpResult, pr *github.PullRequest, baseSHA string, req BumpRequest, locks []string) (*BumpResult, error) {
	res.Blocked = true
	res.Reason = "blocked: " + strings.Join(locks, "; ")
	if pr != nil {
		res.PR, res.URL = pr.GetNumber(), pr.GetHTMLURL()
		return res, b.upsertComment(ctx, pr.GetNumber(), "blocked", fmt.Sprintf("Not updating or merging this bump of %s to %s: %s", containerLabel(req), req.Tag, res.Reason))
	}
	summary := fmt.Sprintf("Not opening a bump of %s to %s in %s: %s", containerLabel(req), req.Tag, req.Env, res.Reason)
	return res, b.writeBlockedCheck(ctx, baseSHA, res.Branch, blockedBumpTitle, summary, true)
}

// clearBlockedBump rewrites an earlier note of a blocked bump, on the pull
// request or the base branch's head, once the bump went through. A pull
// request just created has no comments yet.
func (b *Bot) clearBlockedBump(ctx context.Context, number int, baseSHA, branch string, created bool) error {
	const text = "No lock or hold blocks this bump any more."
	if !created {
		if err := b.editComment(ctx, number, "blocked", text); err != nil {
			return err
		}
	}
	return b.writeBlockedCheck(ctx, baseSHA, branch, clearedBumpTitle, text, false)
}

// writeBump applies req to file on branch and commits it, re-reading and
// re-applying when another bump wrote the file first. It returns the new
// commit, or "" and the reason when the file already says what req says
// (or something newer).
func (b *Bot) writeBump(ctx context.Context, file, branch string, req BumpRequest) (commit, reason string, err error) {
	for attempt := 1; ; attempt++ {
		data, sha, err := b.file(ctx, file, branch)
		if err != nil {
			return "", "", err
		}
		if data == nil {
			return "", "", fmt.Errorf("bumping %s: the file does not exist on %s; create it (and include it from environments/%s/manifest.json) first", file, b.base, req.Env)
		}
		out, reason, err := applyBump(file, data, req, b.manifestOpts...)
		if err != nil || out == nil {
			return "", reason, err
		}
		msg := fmt.Sprintf("Bump %s to %s in %s", containerLabel(req), req.Tag, req.Env)
		commit, err := b.putFile(ctx, branch, file, sha, msg, out)
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
func (b *Bot) prepareBranch(ctx context.Context, branch, baseSHA, file string, hasPR bool) error {
	head, err := b.headRef(ctx, branch)
	if err != nil {
		return err
	}
	if head == "" {
		_, err := b.createRef(ctx, branch, baseSHA)
		return err
	}
	cmp, _, err := b.gh.Repositories.CompareCommits(ctx, b.owner, b.repo, baseSHA, head, nil)
	if err != nil {
		return fmt.Errorf("comparing %s with %s: %w", branch, b.base, err)
	}
	if hasPR {
		return b.keepMergeable(ctx, branch, file, baseSHA, cmp.GetMergeBaseCommit().GetSHA())
	}
	switch cmp.GetStatus() {
	case "identical":
		return nil
	case "behind":
		// Merged already: fast-forward to the base. A concurrent bump that
		// moved the branch in between wins; build on its commit.
		if err := b.setRef(ctx, branch, baseSHA, false); err != nil && !isStatus(err, http.StatusUnprocessableEntity) {
			return err
		}
		return nil
	}
	// "ahead" or "diverged": a pull request closed (unmerged, or squashed)
	// left its commits: start over from the base. Otherwise another bump is
	// writing right now: build on it.
	closed, _, err := b.gh.PullRequests.List(ctx, b.owner, b.repo, &github.PullRequestListOptions{State: "closed", Head: b.owner + ":" + branch, Base: b.base})
	if err != nil {
		return fmt.Errorf("listing closed pull requests from %s: %w", branch, err)
	}
	for _, pr := range closed {
		if pr.GetHead().GetSHA() == head {
			return b.setRef(ctx, branch, baseSHA, true)
		}
	}
	return nil
}

// keepMergeable rebuilds an open bump branch on the base when the base
// changed the file since the branch left it (a manual edit): the bumps the
// branch holds are re-applied on top of the base's file, so the pull request
// stays mergeable and keeps every bump.
func (b *Bot) keepMergeable(ctx context.Context, branch, file, baseSHA, mergeBase string) error {
	if mergeBase == "" || mergeBase == baseSHA {
		return nil
	}
	old, _, err := b.file(ctx, file, mergeBase)
	if err != nil {
		return err
	}
	base, _, err := b.file(ctx, file, baseSHA)
	if err != nil {
		return err
	}
	if bytes.Equal(old, base) || base == nil {
		return nil
	}
	cur, _, err := b.file(ctx, file, branch)
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
		out, _, err := applyBump(file, data, BumpRequest{Service: k.service, Container: k.container, Tag: c.DockerTag, Digest: c.DockerDigest}, b.manifestOpts...)
		if err != nil {
			return fmt.Errorf("re-applying %s on %s: %w", k.label(), b.base, err)
		}
		if out != nil {
			data = out
		}
	}
	if err := b.setRef(ctx, branch, baseSHA, true); err != nil {
		return err
	}
	if bytes.Equal(data, base) {
		return nil
	}
	_, err = b.ensureFile(ctx, branch, file, data, fmt.Sprintf("Re-apply bumps of %s on top of %s", path.Base(file), b.base))
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

func (b *Bot) deleteBranch(ctx context.Context, branch string) {
	// Best effort: a leftover branch is reset by the next bump.
	_, _ = b.gh.Git.DeleteRef(ctx, b.owner, b.repo, "heads/"+branch)
}
