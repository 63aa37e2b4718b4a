package rollback

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// DefaultHoldFor is how long a rollback's hold lasts unless its pull request
// merges or it is released first; rolling back again renews it.
const DefaultHoldFor = 7 * 24 * time.Hour

// DefaultPlanWait bounds how long an incident rollback (--now) waits for the
// reconciler to propose the pinned plan.
const DefaultPlanWait = 30 * time.Second

// Reconciler is what a rollback asks of the reconciler: what ran when, the
// pin of an incident rollback, the environment's status and approvals.
// internal/daemon's Daemon implements it.
type Reconciler interface {
	History(ctx context.Context, env string) ([]approval.Entry, error)
	Pin(ctx context.Context, env string, p *approval.Pin) error
	Environment(ctx context.Context, env string) (*status.Environment, error)
	Approve(ctx context.Context, env, planHash string, who identity.Principal) (*approval.Pending, error)
}

// Rollbacker opens rollback pull requests through prbot, keeps their holds
// in the lock service and pins incident rollbacks in the reconciler.
type Rollbacker struct {
	bot       *prbot.Bot
	locks     *lock.Service
	lockPaths map[string]string
	rec       Reconciler
	holdFor   time.Duration
	planWait  time.Duration
	poll      time.Duration
}

var _ api.Rollbacker = (*Rollbacker)(nil)

// Option configures a Rollbacker.
type Option func(*options) error

type options struct {
	holdFor, planWait, poll time.Duration
}

// WithHoldFor sets how long a hold lasts (DefaultHoldFor).
func WithHoldFor(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("hold duration %s: want a positive duration", d)
		}
		o.holdFor = d
		return nil
	}
}

// WithPlanWait sets how long an incident rollback waits for the pinned plan
// to be proposed (DefaultPlanWait).
func WithPlanWait(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("plan wait %s: want a positive duration", d)
		}
		o.planWait = d
		return nil
	}
}

// Parts are what a Rollbacker works with: the environments named in
// LockPaths (each one's lockPath from reconciler.yaml; "" where it has none,
// which refuses its rollbacks), the Bot opening pull requests, the lock
// service holding in Locks and the Reconciler it asks.
type Parts struct {
	Bot        *prbot.Bot
	Locks      *lock.Service
	LockPaths  map[string]string
	Reconciler Reconciler
}

// New returns the Rollbacker over p.
func New(p Parts, opts ...Option) (*Rollbacker, error) {
	bot, locks, lockPaths, rec := p.Bot, p.Locks, p.LockPaths, p.Reconciler
	o := options{holdFor: DefaultHoldFor, planWait: DefaultPlanWait, poll: 200 * time.Millisecond}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	switch {
	case bot == nil:
		return nil, errors.New("creating the rollbacker: no pull-request bot")
	case locks == nil:
		return nil, errors.New("creating the rollbacker: no lock service (a rollback's hold is a lock)")
	case rec == nil:
		return nil, errors.New("creating the rollbacker: no reconciler")
	}
	paths := make(map[string]string, len(lockPaths))
	for env, path := range lockPaths {
		paths[env] = path
	}
	return &Rollbacker{bot: bot, locks: locks, lockPaths: paths, rec: rec, holdFor: o.holdFor, planWait: o.planWait, poll: o.poll}, nil
}

func (r *Rollbacker) lockPath(env string) (string, error) {
	p, ok := r.lockPaths[env]
	if !ok {
		return "", fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
	}
	if p == "" {
		return "", fmt.Errorf("environment %s has no lockPath in reconciler.yaml: a rollback's hold is kept at <lockPath>/hold: %w", env, api.ErrRollbackNotConfigured)
	}
	return p, nil
}

// Rollback opens or updates env's rollback pull request and places (or
// renews) its hold, linked to the pull request.
func (r *Rollbacker) Rollback(ctx context.Context, env string, req api.RollbackRequest) (*api.RollbackResponse, error) {
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
	entries, err := r.rec.History(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s: %w", env, err)
	}
	if preq.Revision, preq.Ran, err = Target(entries, env, strings.TrimSpace(req.To)); err != nil {
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
		if err := r.incident(ctx, rollbackCall{env: env, req: req, out: out}, res, hold); err != nil {
			return nil, fmt.Errorf("rollback pull request %s is %s and %s is held, but pinning the rollback failed: %w", res.URL, res.Action, env, err)
		}
	}
	return out, nil
}

// automaticRequester is who an automatic rollback's pull request and hold
// are by: Stagehand itself (stagehand:rollback), which no credential can be.
var automaticRequester = identity.Rollback.String()

// Automatic is the daemon's RollbackHook: after a failed rollout of env was
// rolled back (history entry id), it opens the rollback pull request to what
// ran before, so that git says what the cluster runs again, and holds the
// bots off the environment until it merges.
func (r *Rollbacker) Automatic(ctx context.Context, env string, id int64, cause string) error {
	_, err := r.Rollback(ctx, env, api.RollbackRequest{To: "previous", RequestedBy: automaticRequester,
		Reason: fmt.Sprintf("automatic rollback of a failed rollout (history entry %d): %s", id, cause)})
	if err != nil {
		return fmt.Errorf("opening the rollback pull request of %s after history entry %d: %w", env, id, err)
	}
	return nil // with action none git already says what runs: nothing opened or held
}

// Release ends env's hold and says so on its rollback pull request.
func (r *Rollbacker) Release(ctx context.Context, env string, req api.ReleaseRequest) (*api.ReleaseResponse, error) {
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
			if err := r.rec.Pin(ctx, env, nil); err != nil {
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
	if err := r.rec.Pin(ctx, env, nil); err != nil {
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
func (r *Rollbacker) currentPin(ctx context.Context, env string) *approval.Pin {
	v, err := r.rec.Environment(ctx, env)
	if err != nil || v == nil {
		return nil
	}
	return v.Pin
}

// Merged ends the hold of the environment whose rollback pull request was
// merged (the GitHub handler's OnMerged): git now says what the hold kept.
// An incident rollback's pin is left to end by itself (Pin.Apply).
// A hold linked to another pull request is left alone.
func (r *Rollbacker) Merged(ctx context.Context, number int, headRef string) error {
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
