package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"
	"unicode/utf8"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The results of a task and of a run.
const (
	Pass    = "pass"
	Warning = "warning"
	Fail    = "fail"
)

// Target is one cluster namespace of the environment; a Job or an
// AnalysisRun runs in one.
type Target struct {
	Name      string
	Namespace string
	Client    kubernetes.Interface
	// Dynamic reaches Argo Rollouts' analysis resources (analysis tasks).
	Dynamic dynamic.Interface
}

// Run is what a verification is about.
type Run struct {
	Environment string
	Revision    string
	// Versions maps each service to its version (or image tag) at Revision.
	Versions map[string]string
	// Targets are the environment's; a Job runs in the first unless it
	// names another.
	Targets []Target
}

// Report is how a run of an environment's tasks went.
type Report struct {
	Revision string `json:"revision"`
	// Result is fail when a task failed, warning when one warned, else pass.
	Result string       `json:"result"`
	Tasks  []TaskResult `json:"tasks"`
	// Message names the failed task and, when the run stopped there, the
	// tasks not run.
	Message    string    `json:"message,omitempty"`
	Started    time.Time `json:"started"`
	FinishedAt time.Time `json:"finishedAt"`
}

// TaskResult is how one task went.
type TaskResult struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Result   string    `json:"result"`
	Message  string    `json:"message"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// Duration is how long the task ran.
func (r TaskResult) Duration() time.Duration { return r.Finished.Sub(r.Started) }

// Verifier runs tasks.
type Verifier struct {
	client  *http.Client
	jobPoll time.Duration
	now     func() time.Time
}

type options struct {
	client  *http.Client
	allow   []netip.Prefix
	jobPoll time.Duration
}

// Option configures New.
type Option func(*options) error

// WithHTTPClient sets the client of http and prometheus tasks (default: one
// with TLS from the system roots, no proxy, that refuses link-local,
// loopback and unspecified addresses and the cloud metadata services after
// name resolution and on every redirect, see ErrAddressRefused; each
// request is bounded by the task's interval). The client given does its own
// checks: it cannot be combined with WithAllowedAddresses.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("configuring verifier: nil HTTP client")
		}
		o.client = c
		return nil
	}
}

// WithAllowedAddresses opens ranges of addresses that the default client
// refuses (ErrAddressRefused), for tasks that must reach them: a service on
// the reconciler's own host (127.0.0.1/32), a metadata address on purpose.
// A prefix with a zone, or not valid, is an error. Repeatable.
func WithAllowedAddresses(prefixes ...netip.Prefix) Option {
	return func(o *options) error {
		for _, p := range prefixes {
			if !p.IsValid() || p.Addr().Zone() != "" {
				return fmt.Errorf("configuring verifier: allowed address range %q: want an address range such as 127.0.0.1/32 or fd00::/8", p)
			}
			o.allow = append(o.allow, p.Masked())
		}
		return nil
	}
}

// WithJobPoll sets how often a Job's status is read (default 2s).
func WithJobPoll(d time.Duration) Option {
	return func(o *options) error { o.jobPoll = d; return nil }
}

// New returns a Verifier.
func New(opts ...Option) (*Verifier, error) {
	o := options{jobPoll: 2 * time.Second}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	switch {
	case o.client == nil:
		o.client = defaultClient(addressPolicy{allow: o.allow})
	case len(o.allow) > 0:
		return nil, errors.New("configuring verifier: allowed addresses apply to the default HTTP client, not to one given by WithHTTPClient")
	}
	if o.jobPoll <= 0 {
		return nil, fmt.Errorf("configuring verifier: job poll: must be positive, got %s", o.jobPoll)
	}
	return &Verifier{client: o.client, jobPoll: o.jobPoll, now: time.Now}, nil
}

// Verify runs tasks in order for run and reports each one's result; a task
// that fails ends the run. done, if not nil, hears each task's result as it
// ends. When ctx ends, the task running fails with ctx's error, and Verify
// returns it with that error.
func (v *Verifier) Verify(ctx context.Context, run Run, tasks []Task, done func(TaskResult)) (Report, error) {
	rep := Report{Revision: run.Revision, Result: Pass, Tasks: []TaskResult{}, Started: v.now().UTC()}
	for i, t := range tasks {
		tr := v.task(ctx, run, t)
		rep.Tasks = append(rep.Tasks, tr)
		if done != nil {
			done(tr)
		}
		if err := ctx.Err(); err != nil {
			rep.Result, rep.Message = Fail, fmt.Sprintf("task %s: %s", t.Name, tr.Message)
			rep.FinishedAt = v.now().UTC()
			return rep, fmt.Errorf("verifying revision %s: %w", run.Revision, err)
		}
		switch tr.Result {
		case Warning:
			rep.Result = Warning
		case Fail:
			rep.Result = Fail
			rep.Message = fmt.Sprintf("task %s (%s) failed: %s", t.Name, t.Kind, tr.Message)
			if rest := tasks[i+1:]; len(rest) > 0 {
				names := make([]string, len(rest))
				for j, r := range rest {
					names[j] = r.Name
				}
				rep.Message += fmt.Sprintf("; not run: %s", joinNames(names))
			}
			rep.FinishedAt = v.now().UTC()
			return rep, nil
		}
	}
	rep.FinishedAt = v.now().UTC()
	return rep, nil
}

func joinNames(ns []string) string {
	out := ""
	for i, n := range ns {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// task runs t within its timeout.
func (v *Verifier) task(ctx context.Context, run Run, t Task) TaskResult {
	tr := TaskResult{Name: t.Name, Kind: t.Kind, Started: v.now().UTC()}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res verdict
	switch {
	case t.Kind == KindJob && t.Job != nil:
		res = v.job(tctx, run, t)
	case t.Kind == KindHTTP && t.HTTP != nil:
		res = v.http(tctx, t.HTTP)
	case t.Kind == KindPrometheus && t.Prometheus != nil:
		res = v.prometheus(tctx, t.Prometheus)
	case t.Kind == KindAnalysis && t.Analysis != nil:
		res = v.analysis(tctx, run, t)
	default:
		res = verdict{Fail, fmt.Sprintf("kind %q without its settings", t.Kind)}
	}
	if tctx.Err() != nil && ctx.Err() == nil {
		res = verdict{Fail, fmt.Sprintf("timed out after %s: %s", timeout, res.message)}
	}
	tr.Result, tr.Message = res.result, truncate(res.message, maxMessage)
	tr.Finished = v.now().UTC()
	return tr
}

type verdict struct {
	result, message string
}

// count is how many of total evaluations of what ("requests") failed.
type count struct {
	failed, total int
	what          string
}

// judge turns c into a result: a failed ratio above failure fails, above
// warning warns.
func judge(c count, warning, failure float64) verdict {
	if c.total == 0 {
		return verdict{Fail, "no " + c.what + " completed"}
	}
	r := float64(c.failed) / float64(c.total)
	msg := fmt.Sprintf("%d of %d %s failed (%.0f%%)", c.failed, c.total, c.what, 100*r)
	switch {
	case r > failure:
		return verdict{Fail, fmt.Sprintf("%s, above the failure ratio %.0f%%", msg, 100*failure)}
	case r > warning:
		return verdict{Warning, fmt.Sprintf("%s, above the warning ratio %.0f%%", msg, 100*warning)}
	}
	return verdict{Pass, msg}
}

// every calls f now and then every interval until duration has passed
// since the start (the last call starts before then) or ctx ends.
func every(ctx context.Context, interval, duration time.Duration, f func(context.Context)) {
	start := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, interval)
		f(rctx)
		cancel()
		if time.Since(start)+interval > duration {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maxMessage bounds a task's message (it is kept in the history of every
// revision).
const maxMessage = 1024

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
