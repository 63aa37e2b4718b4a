package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
)

// Sink kinds.
const (
	KindSlack       = "slack"
	KindTeams       = "teams"
	KindWebhook     = "webhook"
	KindCloudEvents = "cloudevents"
)

// Sink is one destination of notifications.
type Sink struct {
	// Name names the sink in the metric and in errors.
	Name string
	// Kind is KindSlack, KindTeams, KindWebhook or KindCloudEvents.
	Kind string
	URL  string
	// Secret is the HMAC key of a KindWebhook sink.
	Secret []byte
	// Environments and Events filter what the sink is sent; empty is all.
	Environments []string
	Events       []string
}

// Notifier is an approval.Gate that sends what it hears to its sinks. Make
// it with New or FromConfig, register Collectors, and Close it on shutdown.
type Notifier struct {
	o     options
	sinks []*sink
	total *prometheus.CounterVec

	mu sync.Mutex
	// pending is, per environment, the plan (revision and planHash)
	// announced as pending: a plan proposed again is not announced twice.
	pending map[string]string
	// started is, per environment, the plan whose approval was announced
	// when its apply started (Started).
	started map[string]string
	// deferred is, per environment, the plan announced deferred (Deferred).
	deferred map[string]string

	stop context.CancelFunc
	wg   sync.WaitGroup
}

var (
	_ approval.Gate         = (*Notifier)(nil)
	_ approval.Starter      = (*Notifier)(nil)
	_ approval.Deferrer     = (*Notifier)(nil)
	_ approval.GlassBreaker = (*Notifier)(nil)
)

// FromConfig makes the notifier of reconciler.yaml's notifications:,
// reading each sink's urlFile and secretFile. It returns nil and no error
// when there are no sinks.
func FromConfig(ns []config.Notification, opts ...Option) (*Notifier, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	sinks := make([]Sink, 0, len(ns))
	for i, n := range ns {
		url, err := config.ReadSecret(n.URLFile)
		if err != nil {
			return nil, fmt.Errorf("notifications[%d].urlFile: %w", i, err)
		}
		s := Sink{Name: n.Name, Kind: n.Type, URL: url, Environments: n.Environments, Events: n.Events}
		if n.SecretFile != "" {
			key, err := config.ReadSecret(n.SecretFile)
			if err != nil {
				return nil, fmt.Errorf("notifications[%d].secretFile: %w", i, err)
			}
			s.Secret = []byte(key)
		}
		sinks = append(sinks, s)
	}
	return New(sinks, opts...)
}

// New starts a notifier sending to sinks.
func New(sinks []Sink, opts ...Option) (*Notifier, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	n := &Notifier{o: o, pending: map[string]string{}, started: map[string]string{}, deferred: map[string]string{},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stagehand_notifications_total",
			Help: "Notifications by sink and result: sent, failed (after every retry) or dropped (the sink's queue was full)."},
			[]string{"sink", "result"})}
	seen := map[string]bool{}
	for _, s := range sinks {
		if s.Name == "" || seen[s.Name] {
			return nil, fmt.Errorf("making notifier: sink name %q empty or repeated", s.Name)
		}
		seen[s.Name] = true
		var enc encoder
		switch s.Kind {
		case KindSlack:
			enc = encodeSlack
		case KindTeams:
			enc = encodeTeams
		case KindWebhook:
			if len(s.Secret) == 0 {
				return nil, fmt.Errorf("making notifier: webhook sink %q has no HMAC key", s.Name)
			}
			enc = encodeWebhook(s.Secret)
		case KindCloudEvents:
			enc = encodeCloudEvents
		default:
			return nil, fmt.Errorf("making notifier: sink %q: unknown kind %q", s.Name, s.Kind)
		}
		for _, r := range []string{"sent", "failed", "dropped"} {
			n.total.WithLabelValues(s.Name, r) // shown at 0 from the start
		}
		n.sinks = append(n.sinks, &sink{Sink: s, enc: enc, wake: make(chan struct{}, 1)})
	}
	ctx, stop := context.WithCancel(context.Background())
	n.stop = stop
	for _, s := range n.sinks {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.run(ctx, s)
		}()
	}
	return n, nil
}

// Collectors are the notifier's metrics, for the daemon's registry.
func (n *Notifier) Collectors() []prometheus.Collector { return []prometheus.Collector{n.total} }

// Close waits until every queue is empty (or ctx ends), then stops the
// senders; what is still queued then is dropped.
func (n *Notifier) Close(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	var err error
	for !n.idle() {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("closing notifier with messages unsent: %w", ctx.Err())
		case <-t.C:
			continue
		}
		break
	}
	n.stop()
	n.wg.Wait()
	return err
}

func (n *Notifier) idle() bool {
	for _, s := range n.sinks {
		s.mu.Lock()
		busy := s.busy || len(s.queue) > 0
		s.mu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// key names p's plan.
func key(p approval.Proposal) string {
	if p.Plan == nil {
		return p.Revision
	}
	return p.Revision + " " + p.Plan.PlanHash
}

// Propose announces a plan waiting for approval, once per plan; it decides
// nothing.
func (n *Notifier) Propose(_ context.Context, p approval.Proposal) (approval.Decision, error) {
	k := key(p)
	if !p.Release.IsZero() {
		k += " release"
	}
	n.mu.Lock()
	seen := n.pending[p.Environment] == k
	n.pending[p.Environment] = k
	n.mu.Unlock()
	if seen {
		return approval.Decision{}, nil
	}
	// A release approval waits on the applied plan: same revision and
	// planHash as its approval before it was applied, and told apart here.
	return approval.Decision{}, n.publish(PlanPending, p, Data{Release: !p.Release.IsZero()}, n.o.now())
}

// Deferred announces that an approved (or auto-approved) plan waits for its environment's deploy window,
// once per plan; why says until when.
func (n *Notifier) Deferred(_ context.Context, p approval.Proposal, why string) error {
	k := key(p)
	n.mu.Lock()
	seen := n.deferred[p.Environment] == k
	n.deferred[p.Environment] = k
	n.mu.Unlock()
	if seen {
		return nil
	}
	return n.publish(DeployDeferred, p, Data{Message: why}, n.o.now())
}

// BrokeGlass announces that a plan goes out through its environment's closed deploy windows by a
// break-glass (the worker tells it once per plan, as the apply starts).
func (n *Notifier) BrokeGlass(_ context.Context, p approval.Proposal, b approval.BreakGlass) error {
	return n.publish(DeployBreakGlass, p, Data{Approver: b.By, Message: b.Message(), BreakGlass: &b}, n.o.now())
}

// Superseded announces that a pending plan was replaced by revision by.
func (n *Notifier) Superseded(_ context.Context, p approval.Proposal, by string) error {
	n.forget(p.Environment)
	return n.publish(PlanSuperseded, p, Data{SupersededBy: by}, n.o.now())
}

// Started announces that a plan was approved, once its apply is under way
// (once per plan: a process that continues an interrupted apply calls it
// again).
func (n *Notifier) Started(_ context.Context, p approval.Proposal, approver string) error {
	k := key(p)
	n.mu.Lock()
	seen := n.started[p.Environment] == k
	n.started[p.Environment] = k
	delete(n.pending, p.Environment)
	n.mu.Unlock()
	if seen {
		return nil
	}
	return n.publish(PlanApproved, p, Data{Approver: approver}, n.o.now())
}

// Completed announces a rejection, or how the deploy ended (and, when
// Started did not announce it, the approval, at the apply's start). It
// returns at once: sending is asynchronous.
func (n *Notifier) Completed(_ context.Context, p approval.Proposal, o approval.Outcome) error {
	n.mu.Lock()
	announced := n.started[p.Environment] == key(p)
	delete(n.started, p.Environment)
	delete(n.pending, p.Environment)
	n.mu.Unlock()
	d := Data{Approver: o.Approver, Result: o.Result, Message: o.Message}
	at := func(t time.Time) time.Time {
		if t.IsZero() {
			return n.o.now()
		}
		return t
	}
	if o.Result == approval.ResultRejected {
		return n.publish(PlanRejected, p, d, at(o.Finished))
	}
	approved := Data{Approver: o.Approver}
	var deploy string
	switch o.Result {
	case approval.ResultSucceeded:
		deploy = DeploySucceeded
	case approval.ResultInterrupted:
		deploy = DeployInterrupted
	default:
		deploy = DeployFailed
	}
	var err error
	if !announced {
		err = n.publish(PlanApproved, p, approved, at(o.Started))
	}
	return errors.Join(err, n.publish(deploy, p, d, at(o.Finished)))
}

func (n *Notifier) forget(env string) {
	n.mu.Lock()
	delete(n.pending, env)
	n.mu.Unlock()
}

// publish queues the event name about p for every sink that wants it.
func (n *Notifier) publish(name string, p approval.Proposal, d Data, t time.Time) error {
	m, err := newMessage(name, p, d, t)
	if err != nil {
		return err
	}
	n.queue(m)
	return nil
}

// queue puts m in the queue of every sink that wants it; it never blocks.
func (n *Notifier) queue(m message) {
	envs := m.envs
	if envs == nil {
		envs = []string{m.data.Environment}
	}
	for _, s := range n.sinks {
		if s.wants(envs, m) && s.push(m, n.o.queueSize) {
			n.total.WithLabelValues(s.Name, "dropped").Inc()
			n.o.onError(s.Name, fmt.Errorf("queue of sink %s full: dropped its oldest message", s.Name))
		}
	}
}

// sink is a Sink with its queue.
type sink struct {
	Sink
	enc  encoder
	wake chan struct{}

	mu    sync.Mutex
	queue []message
	busy  bool
}

// wants reports whether s is sent m, about envs. Without an events filter
// a Slack or Teams sink (people read it) is sent no sequence steps.
func (s *sink) wants(envs []string, m message) bool {
	if len(s.Environments) > 0 && !slices.ContainsFunc(envs, func(e string) bool { return slices.Contains(s.Environments, e) }) {
		return false
	}
	if len(s.Events) == 0 {
		return !m.sequence || (s.Kind != KindSlack && s.Kind != KindTeams)
	}
	return slices.ContainsFunc(s.Events, func(f string) bool { return EventMatches(f, m.name) })
}

// EventMatches reports whether the events filter entry f names the event
// name: equal, or "*.<sequence>.<kind>" for a sequence event of any stage.
func EventMatches(f, name string) bool {
	if f == name {
		return true
	}
	rest, ok := strings.CutPrefix(f, "*.")
	if !ok {
		return false
	}
	_, after, ok := strings.Cut(name, ".")
	return ok && after == rest
}

// push queues m, dropping the oldest message when the queue holds size;
// it reports whether it dropped one.
func (s *sink) push(m message, size int) bool {
	s.mu.Lock()
	dropped := len(s.queue) >= size
	if dropped {
		s.queue = slices.Delete(s.queue, 0, 1)
	}
	s.queue = append(s.queue, m)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return dropped
}

// next takes the oldest message, waiting for one until ctx ends.
func (s *sink) next(ctx context.Context) (message, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			m := s.queue[0]
			s.queue = slices.Delete(s.queue, 0, 1)
			s.busy = true
			s.mu.Unlock()
			return m, true
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return message{}, false
		case <-s.wake:
		}
	}
}

func (s *sink) done() {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
}

// run sends s's messages one after the other until ctx ends.
func (n *Notifier) run(ctx context.Context, s *sink) {
	for {
		m, ok := s.next(ctx)
		if !ok {
			return
		}
		if err := n.deliver(ctx, s, m); err != nil {
			n.total.WithLabelValues(s.Name, "failed").Inc()
			n.o.onError(s.Name, err)
		} else {
			n.total.WithLabelValues(s.Name, "sent").Inc()
		}
		s.done()
	}
}

// deliver sends m to s, retrying with exponential backoff (or after the
// Retry-After of a 429 or 503) on network errors, 408, 429 and 5xx.
func (n *Notifier) deliver(ctx context.Context, s *sink, m message) error {
	backoff := n.o.minBackoff
	var last error
	for attempt := 1; ; attempt++ {
		wait, retry, err := n.attempt(ctx, s, m)
		if err == nil {
			return nil
		}
		last = fmt.Errorf("sending %s to sink %s (attempt %d of %d): %w", m.name, s.Name, attempt, n.o.attempts, err)
		if !retry || attempt >= n.o.attempts {
			return last
		}
		if wait <= 0 {
			wait = backoff
			backoff = min(2*backoff, n.o.maxBackoff)
		}
		wait = min(wait, n.o.maxRetryAfter)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(last, ctx.Err())
		case <-t.C:
		}
	}
}

// attempt sends m once; it returns the wait a Retry-After asks for, and
// whether a failure is worth retrying.
func (n *Notifier) attempt(ctx context.Context, s *sink, m message) (time.Duration, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, n.o.timeout)
	defer cancel()
	req, err := s.enc(rctx, s.URL, m)
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("User-Agent", "stagehand")
	resp, err := n.o.client.Do(req)
	if err != nil {
		return 0, ctx.Err() == nil, redact(err, s.URL)
	}
	defer resp.Body.Close()
	drain(resp)
	if resp.StatusCode/100 == 2 {
		return 0, true, nil
	}
	err = fmt.Errorf("receiver answered %s", resp.Status)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return retryAfter(resp.Header.Get("Retry-After"), n.o.now()), true, err
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return 0, true, err
	}
	return 0, false, err
}
