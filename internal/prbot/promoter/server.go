package promoter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v60/github"
	"github.com/robfig/cron/v3"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// Promoter is what a Server asks of the bot (*prbot.Bot): the repository it
// works on, its pipeline, and the promotions themselves.
type Promoter interface {
	Repository() string // owner/name
	Base() string
	Path(rel string) string
	Pipeline(ctx context.Context, ref string) (*promote.Pipeline, error)
	Promote(ctx context.Context, from, to string, dryRun bool) (*prbot.PromoteResult, error)
	Now() time.Time
}

// Option configures New.
type Option func(*options) error

type options struct {
	resync   time.Duration
	onResult func(*prbot.PromoteResult, error)
}

// Server evaluates the promotions of pipeline.yaml as they become possible:
//
//   - a push to the base branch re-evaluates every promotion (new versions,
//     a merged promotion, a changed pipeline);
//   - a completed stagehand/<env> check run re-evaluates the promotions from
//     <env> (new evidence of health);
//   - any other completed check run, or a final commit status, on a
//     promotion branch re-evaluates the promotions (auto-merge waits for
//     green checks);
//   - each promotion window's cron schedule re-evaluates its promotion when
//     the window opens, and a soaking service's promotion is re-evaluated
//     when its soak ends;
//   - every resync interval everything is re-evaluated, which also notices
//     locks that were released (locks send no webhooks).
//
// Webhook handlers only queue work; one worker evaluates, coalescing bursts.
type Server struct {
	bot      Promoter
	resync   time.Duration
	onResult func(*prbot.PromoteResult, error)

	mu      sync.Mutex
	all     bool
	from    map[string]bool // stages whose health changed
	pairs   map[promote.Pair]bool
	timers  map[promote.Pair]*time.Timer
	wake    chan struct{}
	cron    *cron.Cron
	windows string // the windows the cron was built for
}

// WithResync sets how often a Server re-evaluates every promotion
// regardless of events (default 10m; 0 turns it off).
func WithResync(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("setting resync: %s is negative", d)
		}
		o.resync = d
		return nil
	}
}

// WithResultHandler is called after every evaluation of a Server with its
// result or error (for the binary to log; the package itself never logs).
func WithResultHandler(f func(*prbot.PromoteResult, error)) Option {
	return func(o *options) error { o.onResult = f; return nil }
}

// New returns a server that evaluates the bot's repository.
func New(bot Promoter, opts ...Option) (*Server, error) {
	o := options{resync: 10 * time.Minute, onResult: func(*prbot.PromoteResult, error) {}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("creating prbot server: %w", err)
		}
	}
	if bot == nil {
		return nil, fmt.Errorf("creating prbot server: no bot")
	}
	return &Server{bot: bot, resync: o.resync, onResult: o.onResult,
		from: map[string]bool{}, pairs: map[promote.Pair]bool{}, timers: map[promote.Pair]*time.Timer{}, wake: make(chan struct{}, 1)}, nil
}

// Register adds the server's push, check_run and status handlers to a webhook receiver.
func (s *Server) Register(r *webhook.Receiver) {
	r.Handle("push", s.handlePush)
	r.Handle("check_run", s.handleCheckRun)
	r.Handle("status", s.handleStatus)
}

// handleStatus re-evaluates when a commit status of another CI system
// settles on a promotion branch.
func (s *Server) handleStatus(_ context.Context, e webhook.Event) error {
	var ev github.StatusEvent
	if err := json.Unmarshal(e.Payload, &ev); err != nil {
		return fmt.Errorf("decoding status delivery %s: %w", e.Delivery, err)
	}
	if ev.GetState() == "pending" || !s.ours(ev.GetRepo()) {
		return nil
	}
	for _, b := range ev.Branches {
		if strings.HasPrefix(b.GetName(), "stagehand/promote-") {
			s.mu.Lock()
			s.all = true
			s.mu.Unlock()
			s.poke()
			return nil
		}
	}
	return nil
}

func (s *Server) ours(r *github.Repository) bool {
	return strings.EqualFold(r.GetFullName(), s.bot.Repository())
}

func (s *Server) handlePush(_ context.Context, e webhook.Event) error {
	var ev github.PushEvent
	if err := json.Unmarshal(e.Payload, &ev); err != nil {
		return fmt.Errorf("decoding push delivery %s: %w", e.Delivery, err)
	}
	if ev.Repo == nil || !strings.EqualFold(ev.Repo.GetFullName(), s.bot.Repository()) || ev.GetRef() != "refs/heads/"+s.bot.Base() {
		return nil
	}
	s.mu.Lock()
	s.all = true
	s.mu.Unlock()
	s.poke()
	return nil
}

func (s *Server) handleCheckRun(_ context.Context, e webhook.Event) error {
	var ev github.CheckRunEvent
	if err := json.Unmarshal(e.Payload, &ev); err != nil {
		return fmt.Errorf("decoding check_run delivery %s: %w", e.Delivery, err)
	}
	if ev.GetAction() != "completed" || !s.ours(ev.GetRepo()) {
		return nil
	}
	run := ev.GetCheckRun()
	s.mu.Lock()
	if env, ok := approval.EnvOfCheck(run.GetName()); ok {
		s.from[env] = true
	}
	for _, pr := range run.PullRequests {
		if ref := pr.GetHead().GetRef(); strings.HasPrefix(ref, "stagehand/promote-") {
			s.all = true // the worker matches the branch against the pipeline's pairs
		}
	}
	if run.GetCheckSuite().GetHeadBranch() != "" && strings.HasPrefix(run.GetCheckSuite().GetHeadBranch(), "stagehand/promote-") {
		s.all = true
	}
	s.mu.Unlock()
	s.poke()
	return nil
}

// Enqueue asks for an evaluation of one promotion.
func (s *Server) Enqueue(p promote.Pair) {
	s.mu.Lock()
	s.pairs[p] = true
	s.mu.Unlock()
	s.poke()
}

func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run evaluates every promotion once, then as events, windows, soak ends
// and the resync interval ask, until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	defer s.stop()
	s.mu.Lock()
	s.all = true
	s.mu.Unlock()
	var tick <-chan time.Time
	if s.resync > 0 {
		t := time.NewTicker(s.resync)
		defer t.Stop()
		tick = t.C
	}
	for {
		s.evaluate(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-tick:
			s.mu.Lock()
			s.all = true
			s.mu.Unlock()
		}
	}
}

// evaluate runs the queued evaluations.
func (s *Server) evaluate(ctx context.Context) {
	s.mu.Lock()
	all, from, pairs := s.all, s.from, s.pairs
	s.all, s.from, s.pairs = false, map[string]bool{}, map[promote.Pair]bool{}
	s.mu.Unlock()
	if !all && len(from) == 0 && len(pairs) == 0 {
		return
	}
	pl, err := s.bot.Pipeline(ctx, s.bot.Base())
	if err != nil || pl == nil {
		if err == nil {
			err = fmt.Errorf("no %s on %s", s.bot.Path(promote.FileName), s.bot.Base())
		}
		s.onResult(nil, fmt.Errorf("reading the pipeline: %w", err))
		return
	}
	s.schedule(pl)
	for _, p := range pl.Pairs() {
		if !all && !from[p.From] && !pairs[p] {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		res, err := s.bot.Promote(ctx, p.From, p.To, false)
		s.onResult(res, err)
		if err == nil {
			s.afterSoak(p, res.Decision)
		}
	}
}

// schedule (re)builds the cron jobs that open promotion windows.
func (s *Server) schedule(pl *promote.Pipeline) {
	var key strings.Builder
	for _, st := range pl.Stages {
		if st.Window != nil && st.PromoteFrom != "" {
			fmt.Fprintf(&key, "%s>%s@%s/%s;", st.PromoteFrom, st.Name, st.Window.Schedule, st.Window.Duration)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cron != nil && key.String() == s.windows {
		return
	}
	if s.cron != nil {
		s.cron.Stop()
	}
	s.cron, s.windows = cron.New(), key.String()
	for _, st := range pl.Stages {
		if st.Window == nil || st.PromoteFrom == "" {
			continue
		}
		p := promote.Pair{From: st.PromoteFrom, To: st.Name}
		s.cron.Schedule(st.Window.Cron(), cron.FuncJob(func() { s.Enqueue(p) }))
	}
	s.cron.Start()
}

// afterSoak re-evaluates a promotion when its first held service's soak ends.
func (s *Server) afterSoak(p promote.Pair, d promote.Decision) {
	var next time.Time
	for _, h := range d.Held {
		if !h.Until.IsZero() && (next.IsZero() || h.Until.Before(next)) {
			next = h.Until
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.timers[p]; t != nil {
		t.Stop()
		delete(s.timers, p)
	}
	if next.IsZero() {
		return
	}
	wait := next.Sub(s.bot.Now()) + time.Second
	s.timers[p] = time.AfterFunc(max(wait, time.Second), func() { s.Enqueue(p) })
}

func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cron != nil {
		s.cron.Stop()
	}
	for _, t := range s.timers {
		t.Stop()
	}
}
