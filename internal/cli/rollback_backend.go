package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// defaultHoldFor is how long a rollback's hold lasts unless its pull
// request merges or it is released first; rolling back again renews it.
const defaultHoldFor = 7 * 24 * time.Hour

// rollbacker is the API's api.Rollbacker in `reconciler run`: prbot opens
// the rollback pull request through the GitHub App, the lock service keeps
// the hold, and the daemon's history says what ran when.
type rollbacker struct {
	bot     *prbot.Bot
	locks   *lock.Service
	envs    map[string]config.Environment
	history func(ctx context.Context, env string) ([]approval.Entry, error)
	holdFor time.Duration
	// Incident mode (--now): the daemon's pin, status and approval.
	pin         func(ctx context.Context, env string, p *approval.Pin) error
	environment func(ctx context.Context, env string) (*status.Environment, error)
	approve     func(ctx context.Context, env, planHash string, who identity.Principal) (*approval.Pending, error)
	// planWait bounds how long --now waits for the pinned plan.
	planWait time.Duration
}

var _ api.Rollbacker = (*rollbacker)(nil)

// A rollback's --to: a history id is a number of up to six digits
// (optionally "#12"); a revision 7 to 40 hex digits.
var (
	historyIDRE   = regexp.MustCompile(`^#?[0-9]{1,6}$`)
	hexRevisionRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
)

func (r *rollbacker) lockPath(env string) (string, error) {
	ec, ok := r.envs[env]
	if !ok {
		return "", fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
	}
	if ec.LockPath == "" {
		return "", fmt.Errorf("environment %s has no lockPath in reconciler.yaml: a rollback's hold is kept at <lockPath>/hold: %w", env, api.ErrRollbackNotConfigured)
	}
	return ec.LockPath, nil
}

// Rollback opens or updates env's rollback pull request and places (or
// renews) its hold, linked to the pull request.
func (r *rollbacker) Rollback(ctx context.Context, env string, req api.RollbackRequest) (*api.RollbackResponse, error) {
	lockPath, err := r.lockPath(env)
	if err != nil {
		return nil, err
	}
	if !req.Caller.ID.IsZero() {
		// The typed identity names the hold's author, the pull request's requester and the pin: a hold by
		// "alice" could be anyone's named alice; one by token:alice is that token's.
		req.RequestedBy = req.Caller.ID.String()
	}
	preq := prbot.RollbackRequest{Env: env, Reason: req.Reason, RequestedBy: req.RequestedBy}
	if err := r.target(ctx, env, strings.TrimSpace(req.To), &preq); err != nil {
		return nil, err
	}
	res, err := r.bot.Rollback(ctx, preq)
	if errors.Is(err, prbot.ErrUnknownRevision) {
		return nil, fmt.Errorf("%w: %w", api.ErrUnknownRollbackTarget, err)
	}
	if err != nil {
		return nil, err
	}
	out := &api.RollbackResponse{Environment: env, Revision: res.Revision, Action: res.Action, PR: res.PR, URL: res.URL, Title: res.Title,
		Services: []string{}, Skipped: res.Skipped}
	for _, c := range res.Changes {
		for _, ct := range c.Containers {
			out.Services = append(out.Services, fmt.Sprintf("%s %s %s → %s", c.Service, ct.DockerName, ct.FromTag, ct.ToTag))
		}
		if len(c.Containers) == 0 {
			out.Services = append(out.Services, fmt.Sprintf("%s version %s → %s", c.Service, c.FromVersion, c.ToVersion))
		}
	}
	if res.Action == prbot.ActionNone {
		out.Message = "nothing to roll back: " + res.Reason
		return out, nil
	}
	hold, err := r.locks.PlaceHold(ctx, lock.NewHold(lockPath, req.RequestedBy, r.locks.Now().Add(r.holdFor),
		map[string]string{lock.HoldLinkPullRequest: res.URL}))
	if err != nil {
		return nil, fmt.Errorf("rollback pull request %s is %s, but placing the hold on %s failed: %w", res.URL, res.Action, env, err)
	}
	out.Hold = &hold
	out.Message = fmt.Sprintf("rollback of %s to %s %s: %s; %s held until %s (merging the pull request or `reconciler release --env %s` ends it)",
		env, shortSHA(res.Revision), res.Action, res.URL, env, hold.ExpiresAt.UTC().Format(time.RFC3339), env)
	if req.Now {
		if err := r.incident(ctx, env, req, res, hold, out); err != nil {
			return nil, fmt.Errorf("rollback pull request %s is %s and %s is held, but pinning the rollback failed: %w", res.URL, res.Action, env, err)
		}
	}
	return out, nil
}

// incident pins the rolled-back versions in the reconciler for as long as
// the hold lasts, waits for the plan the pin makes, and approves it as the
// caller; a refused approval leaves it pending for an approver.
func (r *rollbacker) incident(ctx context.Context, env string, req api.RollbackRequest, res *prbot.RollbackResult, hold lock.Lock, out *api.RollbackResponse) error {
	by := req.RequestedBy
	if !req.Caller.ID.IsZero() {
		by = req.Caller.ID.String() // the typed identity: a skipConfirmation environment's history names it
	}
	p := &approval.Pin{PR: res.PR, URL: res.URL, Revision: res.Revision, By: by, At: r.locks.Now().UTC().Truncate(time.Second), ExpiresAt: hold.ExpiresAt} // the hold's clock: the API server's
	for _, c := range res.Changes {
		s := manifest.Service{Name: c.Service, Version: c.ToVersion}
		for _, ct := range c.Containers {
			s.Containers = append(s.Containers, manifest.Container{DockerName: ct.DockerName, DockerTag: ct.ToTag, DockerDigest: ct.ToDigest})
		}
		p.Services = append(p.Services, s)
		r := manifest.Service{Name: c.Service, Version: c.FromVersion}
		for _, ct := range c.Containers {
			r.Containers = append(r.Containers, manifest.Container{DockerName: ct.DockerName, DockerTag: ct.FromTag, DockerDigest: ct.FromDigest})
		}
		p.Replaced = append(p.Replaced, r)
	}
	if err := r.pin(ctx, env, p); err != nil {
		return err
	}
	out.Pin = p
	out.Message += "; " + p.Message()
	wait, cancel := context.WithTimeout(ctx, r.planWait)
	defer cancel()
	for {
		v, err := r.environment(wait, env)
		if err == nil {
			switch {
			// The pending plan must be the pinned one, not one proposed from git's
			// versions by a pass that began before the pin was stored: approving
			// that would approve the very versions being rolled back from.
			case v.Pending != nil && !v.Pending.ProposedAt.Before(p.At) && plansPin(v.Pending.Plan, p):
				out.PlanHash = v.Pending.PlanHash
				if foreign := foreignChanges(v.Pending.Plan, p); len(foreign) > 0 {
					// The pin's plan carries more than the pin (a service added
					// since the target, a container git changed): --now
					// approves the rollback, not what else waits.
					out.Approval = "pending"
					out.Message += fmt.Sprintf("; its plan %s was not approved: its changes differ from the rollback's, it also changes %s: it waits for an approver",
						v.Pending.PlanHash, strings.Join(foreign, "; "))
					return nil
				}
				got, err := r.approve(ctx, env, v.Pending.PlanHash, req.Caller)
				if err != nil {
					out.Approval = "pending"
					out.Message += fmt.Sprintf("; its plan %s waits for an approver (approving it as %s was refused: %v)", v.Pending.PlanHash, req.RequestedBy, err)
					return nil
				}
				if got != nil && !got.Complete() {
					// The environment needs more approvers than the caller (approvals.required).
					out.Approval = "pending"
					out.Message += fmt.Sprintf("; its plan %s has %d of the %d approvals it needs (%s counted): it waits for more approvers",
						v.Pending.PlanHash, len(got.Approvals), got.Needed(), req.RequestedBy)
					return nil
				}
				out.Approval = "approved"
				out.Message += fmt.Sprintf("; its plan %s was approved by %s and is being applied", v.Pending.PlanHash, req.RequestedBy)
				return nil
			case v.LastResult != nil && !v.LastResult.Started.Before(p.At):
				out.PlanHash, out.Approval = v.LastResult.PlanHash, "applied"
				out.Message += fmt.Sprintf("; its plan %s was applied (%s)", v.LastResult.PlanHash, v.LastResult.Result)
				return nil
			}
		}
		select {
		case <-wait.Done():
			out.Approval = "pending"
			out.Message += fmt.Sprintf("; its plan was not proposed within %s: the reconciler plans it at its next pass, approve it then", r.planWait)
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// plansPin reports whether plan (a pending plan's JSON) moves no container
// of a pinned service to another tag than the pin's: the plan of the pin,
// not of the versions it replaces.
func plansPin(plan json.RawMessage, p *approval.Pin) bool {
	var pl reconcile.Plan
	if err := json.Unmarshal(plan, &pl); err != nil {
		return false
	}
	for _, c := range pl.Changes {
		var tags []string
		for _, s := range p.Services {
			if s.Name == c.Service {
				for _, ct := range s.Containers {
					tags = append(tags, ct.DockerTag)
				}
			}
		}
		if tags != nil && !slices.Contains(tags, imageTag(c.To)) {
			return false
		}
	}
	return true
}

// foreignChanges describes the changes of plan (a pending plan's JSON) that
// are not the pin's (approval.Pin.Foreign); an unreadable plan is one change
// that cannot be told.
func foreignChanges(plan json.RawMessage, p *approval.Pin) []string {
	var pl reconcile.Plan
	if err := json.Unmarshal(plan, &pl); err != nil {
		return []string{fmt.Sprintf("whatever its unreadable plan holds (%v)", err)}
	}
	var out []string
	for _, c := range p.Foreign(pl.Changes) {
		out = append(out, approval.DescribeChange(c))
	}
	return out
}

// imageTag is the tag of an image reference ("repo:tag", "repo:tag@digest"; "" without one).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}

// target fills in req's revision and what the history says of it: to is
// "previous", a history entry id (`reconciler history`) or a revision.
func (r *rollbacker) target(ctx context.Context, env, to string, req *prbot.RollbackRequest) error {
	entries, err := r.history(ctx, env)
	if err != nil {
		return fmt.Errorf("reading the history of %s: %w", env, err)
	}
	ran := func(e approval.Entry) *prbot.Ran {
		r := &prbot.Ran{When: e.Finished, Approver: e.Approver}
		if e.Manifest != nil {
			// What ran, pinned versions included, rather than git's at the revision.
			r.Services = e.Manifest.Services
		}
		if e.ID > 0 {
			r.HistoryID = strconv.FormatInt(e.ID, 10)
		}
		return r
	}
	switch {
	case to == "previous":
		// What ran before the newest apply (approval.Previous); without
		// such an entry, the state before the environment's files last
		// changed in git.
		if e, ok := approval.Previous(entries); ok {
			req.Revision, req.Ran = e.Revision, ran(*e)
		}
		return nil
	case historyIDRE.MatchString(to):
		id, err := strconv.ParseInt(strings.TrimPrefix(to, "#"), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: history id %q: %w", api.ErrUnknownRollbackTarget, to, err)
		}
		e, err := approval.FindEntry(entries, env, id)
		if err != nil {
			return fmt.Errorf("%w: %w", api.ErrUnknownRollbackTarget, err)
		}
		// Only an apply that succeeded is a point where its versions ran.
		if e.Result != approval.ResultSucceeded {
			why := "its versions did not stay in the cluster"
			if e.Result == approval.ResultRejected {
				why = "its versions never ran"
			}
			return fmt.Errorf("%w: history entry %d of %s was %s (%s): pick an entry that succeeded (`reconciler history --env %s`)",
				api.ErrUnknownRollbackTarget, id, env, e.Result, why, env)
		}
		req.Revision, req.Ran = e.Revision, ran(*e)
		return nil
	case hexRevisionRE.MatchString(to):
		req.Revision = to
		for _, e := range entries {
			if e.Result == approval.ResultSucceeded && strings.HasPrefix(e.Revision, to) {
				req.Ran = ran(e)
				break
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %q: want previous, a history id or a revision of 7 to 40 lowercase hex digits", api.ErrUnknownRollbackTarget, to)
}

// automaticRequester is who an automatic rollback's pull request and hold
// are by: Stagehand itself (stagehand:rollback), which no credential can be.
var automaticRequester = identity.Rollback.String()

// automatic is the daemon's RollbackHook: after a failed rollout of env was
// rolled back (history entry id), it opens the rollback pull request to what
// ran before, so that git says what the cluster runs again, and holds the
// bots off the environment until it merges.
func (r *rollbacker) automatic(ctx context.Context, env string, id int64, cause string) error {
	_, err := r.Rollback(ctx, env, api.RollbackRequest{To: "previous", RequestedBy: automaticRequester,
		Reason: fmt.Sprintf("automatic rollback of a failed rollout (history entry %d): %s", id, cause)})
	if err != nil {
		return fmt.Errorf("opening the rollback pull request of %s after history entry %d: %w", env, id, err)
	}
	return nil // with action none git already says what runs: nothing opened or held
}

// Release ends env's hold and says so on its rollback pull request.
func (r *rollbacker) Release(ctx context.Context, env string, req api.ReleaseRequest) (*api.ReleaseResponse, error) {
	lockPath, err := r.lockPath(env)
	if err != nil {
		return nil, err
	}
	released, err := r.locks.ReleaseHold(ctx, lockPath)
	if errors.Is(err, lock.ErrNotFound) {
		// No hold (it expired, or was removed with `reconciler unlock`): an
		// incident rollback's pin left behind would keep the cluster on the
		// pinned versions with nothing to end it but the merge, so it goes.
		if p := r.currentPin(ctx, env); p != nil {
			if err := r.pin(ctx, env, nil); err != nil {
				return nil, fmt.Errorf("%s has no hold; removing the pin of rollback #%d failed: %w", env, p.PR, err)
			}
			return &api.ReleaseResponse{Environment: env,
				Message: fmt.Sprintf("%s had no hold; removed the pin of rollback #%d (%s): git decides again", env, p.PR, p.URL)}, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s has no hold to release: %w", env, err)
	}
	// Without its hold, an incident rollback's pin goes too: git decides again.
	if err := r.pin(ctx, env, nil); err != nil {
		return nil, fmt.Errorf("released the hold on %s, but removing its pin failed: %w", env, err)
	}
	// The reason is the caller's text: quoted on one line that pings nobody.
	note := fmt.Sprintf("The hold on %s was released by %s", env, prbot.Quote(req.RequestedBy))
	if strings.TrimSpace(req.Reason) != "" {
		note += ": " + prbot.Quote(req.Reason)
	}
	note += ". `prbot bump` and `prbot promote` may move it again."
	msg := fmt.Sprintf("released the hold on %s (%s)", env, released.Path)
	if err := r.bot.NoteRollback(ctx, env, note); err != nil {
		msg += "; noting it on the rollback pull request failed: " + err.Error()
	}
	return &api.ReleaseResponse{Environment: env, Released: released, Message: msg}, nil
}

// currentPin returns env's pin by its status (nil when none or unknown).
func (r *rollbacker) currentPin(ctx context.Context, env string) *approval.Pin {
	if r.environment == nil {
		return nil
	}
	v, err := r.environment(ctx, env)
	if err != nil || v == nil {
		return nil
	}
	return v.Pin
}

// merged ends the hold of the environment whose rollback pull request was
// merged (the GitHub handler's OnMerged): git now says what the hold kept.
// An incident rollback's pin is left to end by itself (Pin.Apply).
// A hold linked to another pull request is left alone.
func (r *rollbacker) merged(ctx context.Context, number int, headRef string) error {
	env, ok := prbot.RollbackEnv(headRef)
	if !ok {
		return nil
	}
	lockPath, err := r.lockPath(env)
	if err != nil {
		return nil // not an environment of this reconciler
	}
	h, err := r.locks.Get(ctx, lock.HoldPath(lockPath))
	if errors.Is(err, lock.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if h.Type != lock.Hold || !strings.HasSuffix(h.Links[lock.HoldLinkPullRequest], fmt.Sprintf("/pull/%d", number)) {
		return nil
	}
	// The pin stays: it goes by itself once git says what it pins (or moves
	// on), and the reconciler's source may not have the merge yet; removing
	// it now would plan git's old head, the versions rolled back from.
	if _, err := r.locks.ReleaseHold(ctx, lockPath); err != nil && !errors.Is(err, lock.ErrNotFound) {
		return err
	}
	return nil
}

func shortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// newRollbacker builds the rollbacker of `reconciler run` over the
// manifests repository of github.owner/repo; nil without a lock service.
func newRollbacker(cfg *config.Config, gh *github.Client, d *daemon.Daemon) (*rollbacker, error) {
	svc := d.LockService()
	if svc == nil {
		return nil, nil
	}
	bot, err := prbot.New(gh.REST(), cfg.GitHub.Owner, cfg.GitHub.Repo, prbot.WithBase(cfg.Source.Branch), prbot.WithRoot(cfg.Source.Root),
		prbot.WithWebURL(webRoot(cfg.GitHub.APIURL)), prbot.WithManifestOptions(wire.ManifestOptions(cfg.Manifest)...), prbot.WithClock(gh.Now))
	if err != nil {
		return nil, fmt.Errorf("configuring rollbacks: %w", err)
	}
	return &rollbacker{bot: bot, locks: svc, envs: cfg.Environments, holdFor: defaultHoldFor, history: d.History,
		pin: d.Pin, environment: d.Environment, approve: d.Approve, planWait: 30 * time.Second}, nil
}
