package meter

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/version"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// Metrics are the reconciler's Prometheus metrics, registered on a private
// registry (never the global default one).
type Metrics struct {
	Registry *prometheus.Registry

	reconcileDuration *prometheus.HistogramVec
	stepDuration      *prometheus.HistogramVec
	pending           *prometheus.GaugeVec
	changesApplied    *prometheus.CounterVec
	failures          *prometheus.CounterVec
	leader            prometheus.Gauge
	envHeld           *prometheus.GaugeVec
	leaderChanges     *prometheus.CounterVec
	verifications     *prometheus.CounterVec
	verifyDuration    *prometheus.HistogramVec
	unreported        *prometheus.GaugeVec
	reportsDropped    *prometheus.CounterVec
	pendingSince      *prometheus.GaugeVec
	webhookToPatch    *prometheus.HistogramVec

	// pushes follows push webhooks to the patches they cause
	// (pushlatency.go).
	pushes pushTimes

	mu        sync.Mutex
	revisions map[string]time.Time // environment → commit time of the revision last reconciled
	now       func() time.Time
}

// New creates the metrics and registers them, with the Go and process
// collectors, on a new private registry. now is the clock of the commit
// times the revision age is measured from (nil: the local clock).
func New(now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	m := &Metrics{
		Registry: newRegistry(),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stagehand_reconcile_duration_seconds",
			Help: "Time one pass over an environment took: resolve, plan and, when approved, apply.",
			// Few buckets: every one is a series per environment and result
			// (the series budget: docs/observability.md).
			Buckets: []float64{0.05, 0.25, 1, 2.5, 10, 60, 300},
		}, []string{"environment", "result"}),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stagehand_step_duration_seconds",
			Help: "Time one step of a pass over an environment took (fetch, resolve, plan, gate, apply, verify, release, record).",
			// A series per bucket, environment and step: the most of any metric.
			Buckets: []float64{0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 60, 300},
		}, []string{"environment", "step"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stagehand_pending_approvals",
			Help: "1 when the environment has a plan waiting for approval.",
		}, []string{"environment"}),
		changesApplied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_changes_applied_total",
			Help: "Container image changes patched into workloads.",
		}, []string{"environment"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_failures_total",
			Help: "Failed reconcile steps by environment and stage (fetch, resolve, plan, apply, state, gate, rollback).",
		}, []string{"environment", "stage"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stagehand_leader",
			Help: "1 while this replica is the leader that fetches and applies.",
		}),
		envHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stagehand_environment_held",
			Help: "1 while this replica holds the environment's Lease (leaderElection.perEnvironment).",
		}, []string{"environment"}),
		leaderChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_leadership_changes_total",
			Help: "Times this replica began (change=acquired) or stopped (change=lost) leading; environment is empty for the one leader Lease, else the environment whose Lease it is.",
		}, []string{"environment", "change"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_verifications_total",
			Help: "Verification tasks run after a rollout, by environment, task (test or evaluation), kind (job, http, prometheus) and result (pass, warning, fail).",
		}, []string{"environment", "task", "kind", "result"}),
		verifyDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_verification_duration_seconds",
			Help:    "Time a verification task took, by environment and kind.",
			Buckets: []float64{1, 5, 30, 120, 300, 1200},
		}, []string{"environment", "kind"}),
		unreported: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stagehand_outcome_reports_unreported",
			Help: "Outcomes (a plan completed, rejected or superseded) the gate refused and that wait in the state to be reported again.",
		}, []string{"environment"}),
		reportsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_outcome_reports_dropped_total",
			Help: "Unreported outcomes given up: tried 30 times, or pushed out by more than 8 waiting.",
		}, []string{"environment"}),
		pendingSince: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stagehand_pending_approval_timestamp_seconds",
			Help: "When the plan (or the release) waiting for a person in the environment was proposed, in Unix seconds on the API server's clock; absent while none waits. Its age is time() minus it.",
		}, []string{"environment"}),
		webhookToPatch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_webhook_to_patch_seconds",
			Help:    "Time from a push webhook (received by this replica, or handed to it by another's wake-up) to the first patch of the revision it brought, in each environment that revision changed without waiting for a person.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"environment"}),
		revisions: map[string]time.Time{},
		now:       now,
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.reconcileDuration, m.stepDuration, m.pending, m.changesApplied, m.failures, m.leader, m.envHeld, m.leaderChanges,
		m.verifications, m.verifyDuration, m.unreported, m.reportsDropped, m.pendingSince, m.webhookToPatch,
		revisionAge{m},
	)
	return m
}

var revisionAgeDesc = prometheus.NewDesc("stagehand_revision_age_seconds",
	"Seconds since the commit time of the revision last reconciled in the environment.",
	[]string{"environment"}, nil)

// revisionAge computes the age at scrape time, so that it grows between passes.
type revisionAge struct{ m *Metrics }

func (r revisionAge) Describe(ch chan<- *prometheus.Desc) { ch <- revisionAgeDesc }

func (r revisionAge) Collect(ch chan<- prometheus.Metric) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	now := r.m.now()
	for env, t := range r.m.revisions {
		ch <- prometheus.MustNewConstMetric(revisionAgeDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), env)
	}
}

// ObserveRevision records the commit time of the revision env reconciles.
func (m *Metrics) ObserveRevision(env string, commitTime time.Time) {
	if commitTime.IsZero() {
		return
	}
	m.mu.Lock()
	m.revisions[env] = commitTime
	m.mu.Unlock()
}

// ObservePass records how long a pass over env took and how it ended (ok,
// error).
func (m *Metrics) ObservePass(env, result string, d time.Duration) {
	m.reconcileDuration.WithLabelValues(env, result).Observe(d.Seconds())
}

// SetPending says whether env has a plan waiting for a person.
func (m *Metrics) SetPending(env string, pending bool) {
	v := 0.0
	if pending {
		v = 1
	}
	m.pending.WithLabelValues(env).Set(v)
}

// setPendingSince records when the plan waiting for a person in env was
// proposed; zero: none waits.
func (m *Metrics) SetPendingSince(env string, at time.Time) {
	if at.IsZero() {
		m.pendingSince.DeleteLabelValues(env)
		return
	}
	m.pendingSince.WithLabelValues(env).Set(float64(at.UnixNano()) / 1e9)
}

// pushed records a push webhook received now (here, or at another replica
// that woke this one).
func (m *Metrics) Pushed() { m.pushes.push(time.Now()) }

// offered records that the source offers revision to envs.
func (m *Metrics) Offered(revision string, envs []string) { m.pushes.offered(revision, envs) }

// patched records env's first patch of revision: the time since the push
// that brought it, if one did.
func (m *Metrics) Patched(env, revision string) {
	if d, ok := m.pushes.patched(env, revision, time.Now()); ok {
		m.webhookToPatch.WithLabelValues(env).Observe(d.Seconds())
	}
}

// passed records that a pass over env's revision ended.
func (m *Metrics) Passed(env, revision string) { m.pushes.passed(env, revision) }

// unheld shows every environment as not held by this replica, until its
// Lease is (leaderElection.perEnvironment): an environment nobody holds
// then shows as 0 on every replica, not as no series at all.
func (m *Metrics) Unheld(envs []string) {
	for _, env := range envs {
		m.envHeld.WithLabelValues(env).Set(0)
	}
}

// AddApplied counts n container image changes patched in env.
func (m *Metrics) AddApplied(env string, n int) {
	m.changesApplied.WithLabelValues(env).Add(float64(n))
}

// Reports counts env's outcome reports the gate refused (internal/outbox's
// Counter).
func (m *Metrics) Reports(env string) Reports { return Reports{m: m, env: env} }

// Reports counts one environment's outcome reports the gate refused: those
// waiting, those given up, and the failures of reporting or keeping them.
type Reports struct {
	m   *Metrics
	env string
}

// Waiting sets how many outcomes wait to be reported again.
func (c Reports) Waiting(n int) { c.m.unreported.WithLabelValues(c.env).Set(float64(n)) }

// Dropped counts an outcome given up.
func (c Reports) Dropped() { c.m.reportsDropped.WithLabelValues(c.env).Inc() }

// Failed counts a failure to report an outcome (gate) or to keep it in the
// state.
func (c Reports) Failed(gate bool) {
	if gate {
		c.m.Fail(c.env, ReasonGate)
		return
	}
	c.m.Fail(c.env, ReasonState)
}

// Fail counts a failure in env for r.
func (m *Metrics) Fail(env string, r Reason) { m.failures.WithLabelValues(env, string(r)).Inc() }

// observeStep records how long a step of a pass took.
func (m *Metrics) ObserveStep(env, step string, d time.Duration) {
	m.stepDuration.WithLabelValues(env, step).Observe(d.Seconds())
}

// SetLeader records that this replica began or stopped leading (one leader
// Lease).
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
		// What waits for a person is the next leader's to show.
		m.pendingSince.Reset()
	}
	m.leaderChanges.WithLabelValues("", change(leading)).Inc()
}

// leadership records that this replica began or stopped holding env.
func (m *Metrics) Leadership(env string, held bool) {
	v := 0.0
	if held {
		v = 1
	}
	m.envHeld.WithLabelValues(env).Set(v)
	if !held {
		// What waits for a person in env is its next holder's to show.
		m.pendingSince.DeleteLabelValues(env)
	}
	m.leaderChanges.WithLabelValues(env, change(held)).Inc()
}

func change(leading bool) string {
	if leading {
		return "acquired"
	}
	return "lost"
}

// observeVerification counts a verification task's result and its duration.
func (m *Metrics) ObserveVerification(env string, task verify.Task, tr verify.TaskResult) {
	m.verifications.WithLabelValues(env, task.Name, task.Kind, tr.Result).Inc()
	m.verifyDuration.WithLabelValues(env, task.Kind).Observe(tr.Duration().Seconds())
}

var (
	sourceErrorsDesc = prometheus.NewDesc("stagehand_source_errors_total",
		"Polls of the git source that failed (a head refused by signature verification is not counted).", nil, nil)
	sourceFailingDesc = prometheus.NewDesc("stagehand_source_failing_seconds",
		"Seconds since the first of the git source's current run of failed polls; 0 while it answers.", nil, nil)
)

// WatchSource adds the git source's health, read from status at scrape time
// (its times on the clock now), to the registry.
func (m *Metrics) WatchSource(status func() gitsource.Status, now func() time.Time) {
	m.Registry.MustRegister(sourceHealth{status: status, now: now})
}

// sourceHealth reads the source's status at scrape time.
type sourceHealth struct {
	status func() gitsource.Status
	now    func() time.Time // the clock of the status's times
}

func (h sourceHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- sourceErrorsDesc
	ch <- sourceFailingDesc
}

func (h sourceHealth) Collect(ch chan<- prometheus.Metric) {
	st := h.status()
	failing := 0.0
	if !st.FailingSince.IsZero() {
		failing = h.now().Sub(st.FailingSince).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(sourceErrorsDesc, prometheus.CounterValue, float64(st.Errors))
	ch <- prometheus.MustNewConstMetric(sourceFailingDesc, prometheus.GaugeValue, failing)
}

var clockOffsetDesc = prometheus.NewDesc("stagehand_clock_offset_seconds",
	"How far the state cluster's API server's clock is ahead of this replica's (negative: behind), from the Date headers of its responses; the daemon records times on the API server's clock.",
	nil, nil)

// WatchClock adds the offset of the state cluster's API server's clock c to
// the registry.
func (m *Metrics) WatchClock(c *clock.Remote) { m.Registry.MustRegister(clockOffset{c}) }

// clockOffset reports the offset of the API server's clock, once known.
type clockOffset struct{ c *clock.Remote }

func (c clockOffset) Describe(ch chan<- *prometheus.Desc) { ch <- clockOffsetDesc }

func (c clockOffset) Collect(ch chan<- prometheus.Metric) {
	if off, ok := c.c.Offset(); ok {
		ch <- prometheus.MustNewConstMetric(clockOffsetDesc, prometheus.GaugeValue, off.Seconds())
	}
}

// newRegistry is a private registry holding stagehand_build_info.
func newRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(version.Collector(version.Get()))
	return r
}
