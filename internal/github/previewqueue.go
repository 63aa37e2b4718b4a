package github

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the PR preview queue (see WithPreviewWorkers and the options after it).
const (
	DefaultPreviewWorkers   = 1
	DefaultPreviewTimeout   = 2 * time.Minute
	DefaultPreviewQueueSize = 100
	DefaultPreviewCacheAge  = 24 * time.Hour
)

// previewPublishTimeout bounds publishing one preview's check runs once it is computed.
const previewPublishTimeout = time.Minute

type previewOptions struct {
	workers   int
	timeout   time.Duration
	queueSize int
	cacheAge  time.Duration
	onError   func(error)
}

func defaultPreviewOptions() previewOptions {
	return previewOptions{workers: DefaultPreviewWorkers, timeout: DefaultPreviewTimeout, queueSize: DefaultPreviewQueueSize,
		cacheAge: DefaultPreviewCacheAge, onError: func(error) {}}
}

// WithPreviewWorkers sets how many PR previews are computed at once (handler; default
// DefaultPreviewWorkers).
func WithPreviewWorkers(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("preview workers: must be at least 1, got %d", n)
		}
		o.preview.workers = n
		return nil
	}
}

// WithPreviewTimeout bounds computing one PR preview: fetching the branch and planning its environments
// (handler; default DefaultPreviewTimeout). A preview past it is reported as failed.
func WithPreviewTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("preview timeout: must be positive, got %s", d)
		}
		o.preview.timeout = d
		return nil
	}
}

// WithPreviewQueueSize bounds how many pull requests wait for a preview (handler; default
// DefaultPreviewQueueSize); beyond it the oldest waiting one is dropped, reported to OnPreviewError and
// counted in stagehand_github_previews_dropped_total.
func WithPreviewQueueSize(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("preview queue size: must be at least 1, got %d", n)
		}
		o.preview.queueSize = n
		return nil
	}
}

// WithPreviewCacheAge sets how long a branch's preview cache may stay untouched before it is removed
// (handler; default DefaultPreviewCacheAge). Caches are swept whenever the preview workers go idle.
func WithPreviewCacheAge(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("preview cache age: must be positive, got %s", d)
		}
		o.preview.cacheAge = d
		return nil
	}
}

// OnPreviewError receives what goes wrong with PR previews after their webhook was answered: a branch
// that could not be fetched, a check run that could not be published, a preview dropped from a full
// queue, a cache that could not be removed (handler; the binary logs them). Default: dropped.
func OnPreviewError(f func(error)) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("nil preview error function")
		}
		o.preview.onError = f
		return nil
	}
}

// cacheKeeper is a Previewer that keeps a cache per branch (internal/github/preview's BranchPreviewer): the queue removes a
// branch's cache when its pull request closes, and sweeps caches left untouched.
type cacheKeeper interface {
	RemoveCache(branch string) error
	SweepCaches(olderThan time.Duration) error
}

// previewJob is the preview of one pull request's head. updated is the
// pull request's updated_at in the delivery: GitHub may deliver (or a person
// redeliver) an older event after a newer one, and a delivery older than the
// head already queued or running must not replace it.
type previewJob struct {
	pr       int
	ref, sha string
	updated  time.Time
}

// older says whether j comes from a delivery older than k's (same second:
// not older; the newer SHA is then taken to be j's, as before).
func (j previewJob) older(k previewJob) bool { return j.updated.Before(k.updated) }

// runningPreview is a job a worker is computing; cancel ends it when a newer head or the close of its
// pull request makes it moot, and dropped then says its result must not be published.
type runningPreview struct {
	job     previewJob
	cancel  context.CancelFunc
	dropped bool
}

// previewQueue computes PR previews outside the webhook request: newest head per pull request wins, the
// queue is bounded, and at most o.workers previews run at once.
type previewQueue struct {
	previewer Previewer
	publish   func(ctx context.Context, sha string, p Preview) error
	o         previewOptions

	base context.Context // ends at stop: running previews are cancelled
	stop context.CancelFunc
	wg   sync.WaitGroup // workers and cache removals

	mu      sync.Mutex
	pending map[int]previewJob // by pull request: the newest head waiting
	order   []int              // pull requests waiting, oldest first
	running map[int]*runningPreview
	workers int
	stopped bool

	depth   prometheus.Gauge
	dropped prometheus.Counter
}

func newPreviewQueue(p Previewer, publish func(context.Context, string, Preview) error, o previewOptions) *previewQueue {
	base, stop := context.WithCancel(context.Background())
	return &previewQueue{
		previewer: p, publish: publish, o: o, base: base, stop: stop,
		pending: map[int]previewJob{}, running: map[int]*runningPreview{},
		depth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "stagehand_github_preview_queue_depth",
			Help: "Pull requests waiting for a preview."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "stagehand_github_previews_dropped_total",
			Help: "PR previews dropped because the preview queue was full."}),
	}
}

// enqueue queues the preview of job's head, replacing a waiting one of the same pull request and
// cancelling a running one for an older head; a delivery older than the waiting or running one is
// ignored. It never blocks on a preview.
func (q *previewQueue) enqueue(job previewJob) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return
	}
	if r := q.running[job.pr]; r != nil && !r.dropped && r.job.sha != job.sha && job.older(r.job) {
		return // a late delivery of an older head
	}
	if w, waiting := q.pending[job.pr]; waiting && w.sha != job.sha && job.older(w) {
		return
	}
	if r := q.running[job.pr]; r != nil && !r.dropped {
		if r.job == job {
			if _, waiting := q.pending[job.pr]; !waiting {
				return // a redelivery of the head being previewed
			}
		} else {
			r.dropped = true
			r.cancel()
		}
	}
	if _, waiting := q.pending[job.pr]; !waiting {
		if len(q.order) >= q.o.queueSize {
			oldest := q.pending[q.order[0]]
			delete(q.pending, oldest.pr)
			q.order = q.order[1:]
			q.dropped.Inc()
			q.o.onError(fmt.Errorf("preview queue full (%d pull requests): dropped the preview of PR #%d head %s", q.o.queueSize, oldest.pr, short(oldest.sha)))
		}
		q.order = append(q.order, job.pr)
	}
	q.pending[job.pr] = job
	q.depth.Set(float64(len(q.order)))
	if q.workers < q.o.workers {
		q.workers++
		q.wg.Add(1)
		go q.work()
	}
}

// closed forgets pull request pr: its waiting preview goes, a running one is cancelled and its result
// discarded, and the cache of its branch ref is removed (after the running preview lets go of it).
func (q *previewQueue) closed(pr int, ref string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, waiting := q.pending[pr]; waiting {
		delete(q.pending, pr)
		for i, n := range q.order {
			if n == pr {
				q.order = append(q.order[:i:i], q.order[i+1:]...)
				break
			}
		}
		q.depth.Set(float64(len(q.order)))
	}
	if r := q.running[pr]; r != nil {
		r.dropped = true
		r.cancel()
	}
	ck, ok := q.previewer.(cacheKeeper)
	if !ok || q.stopped {
		return
	}
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		if err := ck.RemoveCache(ref); err != nil {
			q.o.onError(fmt.Errorf("removing the preview cache of closed PR #%d: %w", pr, err))
		}
	}()
}

// work computes waiting previews until none is left, then sweeps stale caches and exits.
func (q *previewQueue) work() {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if len(q.order) == 0 || q.stopped {
			q.workers--
			idle := q.workers == 0 && !q.stopped
			q.mu.Unlock()
			if ck, ok := q.previewer.(cacheKeeper); ok && idle {
				if err := ck.SweepCaches(q.o.cacheAge); err != nil {
					q.o.onError(fmt.Errorf("sweeping preview caches: %w", err))
				}
			}
			return
		}
		job := q.pending[q.order[0]]
		delete(q.pending, job.pr)
		q.order = q.order[1:]
		q.depth.Set(float64(len(q.order)))
		ctx, cancel := context.WithTimeout(q.base, q.o.timeout)
		r := &runningPreview{job: job, cancel: cancel}
		q.running[job.pr] = r
		q.mu.Unlock()

		err := q.run(ctx, r)
		cancel()
		q.mu.Lock()
		if q.running[job.pr] == r {
			delete(q.running, job.pr)
		}
		q.mu.Unlock()
		if err != nil {
			q.o.onError(err)
		}
	}
}

// run computes job's preview and publishes it unless a newer head or the close of the pull request made
// it moot meanwhile. An environment whose plan ran past the deadline is published as failed, saying so.
func (q *previewQueue) run(ctx context.Context, r *runningPreview) error {
	job := r.job
	previews, err := q.previewer.Preview(ctx, job.ref, job.sha)
	q.mu.Lock()
	moot := r.dropped || q.stopped
	q.mu.Unlock()
	if moot {
		return nil
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("planning PR #%d head %s: not done within %s (the preview timeout): %w", job.pr, short(job.sha), q.o.timeout, err)
		}
		return fmt.Errorf("planning PR #%d head %s: %w", job.pr, short(job.sha), err)
	}
	pctx, cancel := context.WithTimeout(q.base, previewPublishTimeout)
	defer cancel()
	var errs []error
	for _, p := range previews {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && (p.Err != nil || p.Plan == nil) {
			p.Err = fmt.Errorf("preview of PR #%d head %s: not done within %s (github preview timeout)", job.pr, short(job.sha), q.o.timeout)
		}
		if err := q.publish(pctx, job.sha, p); err != nil {
			errs = append(errs, fmt.Errorf("publishing the %s preview of PR #%d: %w", p.Environment, job.pr, err))
		}
	}
	return errors.Join(errs...)
}

// shutdown drops waiting previews and cancels running ones; wait waits for them to end.
func (q *previewQueue) shutdown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	q.pending, q.order = map[int]previewJob{}, nil
	q.depth.Set(0)
	q.stop()
}

func (q *previewQueue) wait() { q.wg.Wait() }
