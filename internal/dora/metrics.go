package dora

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// HistoryFunc reads env's history, newest first (the daemon's History).
type HistoryFunc func(ctx context.Context, env string) ([]approval.Entry, error)

// Counter counts deploys as the DORA metrics, each once: on the replica
// working the environment, after each of its worker's passes and decisions
// (its Hook is the daemon's RecordHook), from the entries recorded since
// the environment's mark (Marks).
type Counter struct {
	o       options
	marks   *Marks
	started time.Time

	deployments *prometheus.CounterVec
	failures    *prometheus.CounterVec
	leadTime    *prometheus.HistogramVec
	restore     *prometheus.HistogramVec

	mu    sync.Mutex
	known map[string]int64 // environment → the newest entry known counted
}

// maxAttempts is how many times a hook reads the mark again after losing a
// write to another replica.
const maxAttempts = 3

// NewCounter registers the DORA metrics on reg and returns their Counter,
// keeping its marks in marks. A deploy recorded before the counter started
// and before any mark existed is not counted (it is in the history, which
// GET .../dora reads).
func NewCounter(reg prometheus.Registerer, marks *Marks, opts ...Option) (*Counter, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if reg == nil || marks == nil {
		return nil, errors.New("configuring dora: nil registry or marks")
	}
	c := &Counter{
		o: o, marks: marks, started: o.now(), known: map[string]int64{},
		deployments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_deployments_total",
			Help: "Deploys (applies of a plan that changed something) by environment and result (succeeded, failed, rolled_back), counted once as they are recorded.",
		}, []string{"environment", "result"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_change_failures_total",
			Help: "Deploys that were change failures: failed, rolled back, or followed by an incident rollback within dora.rollbackWindow (counted when that rollback is recorded).",
		}, []string{"environment"}),
		leadTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_lead_time_seconds",
			Help:    "Lead time for changes: from the commit time of the first commit of a succeeded deploy's range to its end (deployed and verified).",
			Buckets: []float64{60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800, 1209600, 2592000},
		}, []string{"environment"}),
		restore: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_time_to_restore_seconds",
			Help:    "Time to restore: from the first change failure of an incident to the succeeded deploy that ended it.",
			Buckets: []float64{60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800},
		}, []string{"environment"}),
	}
	for _, col := range []prometheus.Collector{c.deployments, c.failures, c.leadTime, c.restore} {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("registering dora metrics: %w", err)
		}
	}
	return c, nil
}

// Hook is the daemon's RecordHook: after a pass or decision of env's worker
// it counts the deploys recorded since env's mark. Errors go to onError
// (nil: dropped); they never stop the worker.
func (c *Counter) Hook(history HistoryFunc, onError func(env string, err error)) func(ctx context.Context, env, term string, holds func(context.Context) error) {
	return func(ctx context.Context, env, term string, holds func(context.Context) error) {
		h, err := history(ctx, env)
		if err == nil {
			err = c.Count(ctx, env, h, holds)
		}
		if err != nil && onError != nil && ctx.Err() == nil {
			onError(env, err)
		}
	}
}

// Count counts the deploys of history (env's, newest first) recorded after
// env's mark, once it moved the mark past them; holds, asked right before
// that write, refuses once this replica no longer works env.
func (c *Counter) Count(ctx context.Context, env string, history []approval.Entry, holds func(context.Context) error) error {
	c.init(env)
	newest := int64(0)
	if len(history) > 0 {
		newest = history[0].ID
	}
	c.mu.Lock()
	known, ok := c.known[env]
	c.mu.Unlock()
	if ok && known >= newest {
		return nil
	}
	for range maxAttempts {
		m, err := c.marks.load(ctx, env)
		if err != nil {
			return err
		}
		last := m.counted
		if !m.found {
			last = c.before(history)
		}
		if m.found && last >= newest {
			c.remember(env, last)
			return nil
		}
		if err := holds(ctx); err != nil {
			return nil // another replica works env now: it counts
		}
		err = c.marks.store(ctx, env, newest, m)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return err
		}
		c.remember(env, newest)
		c.count(ctx, env, history, idRange{after: last, upTo: newest})
		return nil
	}
	return fmt.Errorf("counting deploys of %s: the mark in configmap %s was written by another replica %d times in a row", env, MarksConfigMap, maxAttempts)
}

// before is the newest entry of history that ended before the counter
// started: where an environment without a mark begins counting.
func (c *Counter) before(history []approval.Entry) int64 {
	for _, e := range history {
		if e.Finished.Before(c.started) {
			return e.ID
		}
	}
	return 0
}

func (c *Counter) remember(env string, counted int64) {
	c.mu.Lock()
	c.known[env] = counted
	c.mu.Unlock()
}

// init makes env's series, at zero, so that rates read 0 before a deploy.
func (c *Counter) init(env string) {
	for _, r := range []string{Succeeded, Failed, RolledBack} {
		c.deployments.WithLabelValues(env, r)
	}
	c.failures.WithLabelValues(env)
}

// idRange is the history entries after the id after, up to upTo.
type idRange struct {
	after, upTo int64
}

// holds says whether id is in r.
func (r idRange) holds(id int64) bool { return id > r.after && id <= r.upTo }

// count counts what became known with the entries of fresh.
func (c *Counter) count(ctx context.Context, env string, history []approval.Entry, fresh idRange) {
	for _, d := range Deploys(history, c.o.rollbackWindow) {
		known := d.Entry.ID
		if d.FailedLater {
			known = d.RolledBackBy
		}
		if d.Failure && fresh.holds(known) {
			c.failures.WithLabelValues(env).Inc()
		}
		if !fresh.holds(d.Entry.ID) {
			continue
		}
		c.deployments.WithLabelValues(env, d.Result).Inc()
		if !d.RestoredFrom.IsZero() {
			c.restore.WithLabelValues(env).Observe(d.Restore().Seconds())
		}
		if d.LeadTimeCounts() && c.o.commits != nil {
			if first, err := c.o.commits.FirstCommit(ctx, d.Base, d.Entry.Revision); err == nil {
				c.leadTime.WithLabelValues(env).Observe(max(d.Entry.Finished.Sub(first), 0).Seconds())
			}
		}
	}
}
