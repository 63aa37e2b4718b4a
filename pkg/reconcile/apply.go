package reconcile

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// job is one workload to patch.
type job struct {
	key     WorkloadKey
	service string
	changes []Change
	target  Target
	recheck *recheck // the target's coalesced lock re-checks (nil: Blocking per patch)
	res     *WorkloadResult
	start   time.Time
	obj     runtime.Object // the patched object
	gen     int64
	canary  *canaryRef // the Flagger Canary that judges the rollout (canary.go)
	// promoted is the pause of the Rollout that was promoted last, and
	// promotedAt the step it paused at (its status message; promote.go).
	promoted, promotedAt string
}

// Apply plans req again and applies the plan if its hash is planHash;
// otherwise it returns a *StalePlanError (errors.Is ErrStalePlan) and
// changes nothing. Workload failures are reported in the Result, not as an
// error. opts apply to this call, over the Reconciler's options.
func (r *Reconciler) Apply(ctx context.Context, req Request, planHash string, opts ...Option) (*Result, error) {
	r, err := r.with(opts)
	if err != nil {
		return nil, err
	}
	return r.applier.apply(ctx, req, planHash)
}

// applier applies plans and restores: it holds the targets' deploy locks,
// patches each workload, records its Events and has the rollout watcher
// wait for what was patched.
type applier struct {
	o        *options
	planner  *planner
	rollouts *rolloutWatcher
}

// apply is Apply, with the call's options already applied.
func (a *applier) apply(ctx context.Context, req Request, planHash string) (*Result, error) {
	plan, err := a.planner.plan(ctx, req, true) // what is patched is checked against the API server, not a cache
	if err != nil {
		return nil, err
	}
	if plan.PlanHash != planHash {
		return &Result{Plan: plan}, &StalePlanError{Want: planHash, Got: plan.PlanHash, Plan: plan}
	}
	jobs := groupJobs(plan, a.withRecorders(req.Targets))
	res := &Result{Plan: plan, Workloads: make([]WorkloadResult, len(jobs))}
	for i, j := range jobs {
		res.Workloads[i] = WorkloadResult{WorkloadKey: j.key, Service: j.service, Changes: j.changes}
		j.res = &res.Workloads[i]
	}
	if len(jobs) == 0 {
		return res, nil
	}
	a.run(req).deliver(ctx, jobs, nil)
	return res, nil
}

// applyRun is one Apply or Restore under way: its request, where its
// progress goes, and the wait for its Deploying Events.
type applyRun struct {
	a      *applier
	req    Request
	report func(*job, Phase, string)
	// deployingWritten waits until every Deploying Event is written (set by
	// patchAll).
	deployingWritten func()
}

// run begins an Apply or Restore of req.
func (a *applier) run(req Request) *applyRun {
	rep := &reporter{fn: a.o.progress}
	return &applyRun{a: a, req: req, report: rep.report, deployingWritten: func() {}}
}

// deliver holds the targets of jobs, patches them, calls patched (when not
// nil) with those whose patch went through, and waits for their rollouts.
// It returns once every lock taken is released and every Event written.
func (run *applyRun) deliver(ctx context.Context, jobs []*job, patched func([]*job)) {
	release := run.holdTargets(ctx, jobs)
	defer release() // after the Events are written: deferred calls run last first
	findCanaries(ctx, jobs, run.report)
	done := run.patchAll(ctx, jobs)
	defer run.deployingWritten()
	if patched != nil {
		patched(done)
	}
	run.finishRollouts(ctx, done)
}

// reporter passes progress to WithProgress's function, one call at a time.
type reporter struct {
	mu sync.Mutex
	fn func(Progress)
}

func (p *reporter) report(j *job, ph Phase, msg string) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(Progress{WorkloadKey: j.key, Service: j.service, Phase: ph, Message: msg})
}

// patchAll patches every job that has no outcome yet (none blocked or failed
// while locking), at most r.o.concurrency at a time, and returns the jobs
// whose patch went through. Once the last patch is answered each of those
// gets its Deploying Event; run.deployingWritten blocks until all are written.
//
// After the patches, not beside them: an Event is an API write like a patch,
// and on a busy API server every Event written during the patch phase delays
// the next workload's deploy. Written after it, the Events overlap the
// rollout wait, which takes seconds where they take milliseconds, and the
// wait still makes Apply return only once every Event is written. (client-go's
// broadcasters could not promise that: tools/record and tools/events drop
// beyond 1,000 queued and neither can be flushed.)
func (run *applyRun) patchAll(ctx context.Context, jobs []*job) []*job {
	o := run.a.o
	var todo []*job
	rechecks := map[string]*recheck{}
	for _, j := range jobs {
		if j.res.Outcome != "" {
			continue
		}
		todo = append(todo, j)
		if l, ok := o.locks.(LockLister); ok {
			if rechecks[j.key.Target] == nil {
				rechecks[j.key.Target] = newRecheck(ctx, l, lockPath(run.req.LockPath, lockSegment(j.key.Target)))
			}
			j.recheck = rechecks[j.key.Target]
		}
	}
	var patched []*job
	var mu sync.Mutex
	_ = forEach(len(todo), o.concurrency, func(i int) error {
		j := todo[i]
		j.start = time.Now()
		pctx, span := startSpan(ctx, "patch", workloadAttrs(j)...)
		defer endJob(span, j)
		if err := run.patchOne(pctx, j); err != nil {
			finish(j, OutcomeFailed, err.Error())
			run.report(j, PhaseFailed, j.res.Message)
			return nil
		}
		if j.res.Outcome == OutcomeBlocked {
			run.report(j, PhaseBlocked, j.res.Message)
			return nil
		}
		span.SetAttributes(attrOutcome.String("patched"))
		run.report(j, PhasePatched, describe(j.changes))
		mu.Lock()
		patched = append(patched, j)
		mu.Unlock()
		return nil
	})

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = forEach(len(patched), o.concurrency, func(i int) error {
			j := patched[i]
			run.event(ctx, j, workloadEvent{corev1.EventTypeNormal, "Deploying",
				fmt.Sprintf("Deploying revision %s: %s", gitsource.ShortRevision(run.req.Revision), describe(j.changes))})
			return nil
		})
	}()
	run.deployingWritten = func() { <-done }
	return patched
}

// finishRollouts waits for the rollouts of the patched jobs (unless the
// rollout timeout is zero) and records each outcome; a failed rollout gets a
// RolloutFailed Warning Event, written after the Deploying Events so that it
// is never the older of the two.
func (run *applyRun) finishRollouts(ctx context.Context, patched []*job) {
	o, report := run.a.o, run.report
	if o.rolloutTimeout == 0 {
		for _, j := range patched {
			finish(j, OutcomePatched, "rollout not waited for")
		}
		return
	}
	ctx, span := startSpan(ctx, "rollout wait", attrWorkloads.Int(len(patched)))
	defer span.End()
	rollingOut := func(j *job, st workload.Status, changed bool) {
		if changed {
			report(j, PhaseRollingOut, st.Message)
		}
		if st.Paused && o.promotion == PromotionAuto {
			run.promoteStep(ctx, j, st)
		}
	}
	run.a.rollouts.wait(ctx, patched, rollingOut, func(j *job, st workload.Status) {
		defer func() { // once finished: with the workload's outcome
			span.AddEvent("rolled out", trace.WithAttributes(append(workloadAttrs(j), attrOutcome.String(string(j.res.Outcome)))...))
		}()
		msg := st.Message
		switch {
		case st.Done:
			finish(j, OutcomeSucceeded, msg)
			report(j, PhaseSucceeded, msg)
			return
		case st.OnDelete:
			finish(j, OutcomeOnDelete, msg)
			report(j, PhaseOnDelete, msg)
			return
		}
		finish(j, OutcomeFailed, msg)
		span.SetStatus(codes.Error, j.key.Kind+" "+j.key.Namespace+"/"+j.key.Name+": "+msg)
		run.deployingWritten()
		run.event(ctx, j, workloadEvent{corev1.EventTypeWarning, "RolloutFailed", fmt.Sprintf("Rollout of revision %s failed: %s", gitsource.ShortRevision(run.req.Revision), msg)})
		report(j, PhaseFailed, msg)
	})
}

func finish(j *job, o Outcome, msg string) {
	j.res.Outcome, j.res.Message = o, msg
	if !j.start.IsZero() {
		j.res.Duration = time.Since(j.start).Round(time.Millisecond)
	}
}

// groupJobs turns the plan's changes into one job per workload, in plan order.
func groupJobs(p *Plan, targets []Target) []*job {
	byName := map[string]Target{}
	for _, t := range targets {
		byName[t.Name] = t
	}
	var jobs []*job
	for _, c := range p.Changes {
		if n := len(jobs); n > 0 && jobs[n-1].key == c.Key() {
			jobs[n-1].changes = append(jobs[n-1].changes, c)
			continue
		}
		jobs = append(jobs, &job{key: c.Key(), service: c.Service, changes: []Change{c}, target: byName[c.Target]})
	}
	return jobs
}

// holdTargets takes the deploy lock on every target that has jobs. A target
// already locked, or whose lock cannot be taken, has its jobs marked blocked
// or failed. The returned release gives back every lock taken.
func (run *applyRun) holdTargets(ctx context.Context, jobs []*job) func() {
	o := run.a.o
	var releases []func(context.Context) error
	release := func() {
		for _, rel := range releases {
			_ = rel(context.WithoutCancel(ctx)) // the lock expires by its TTL if this fails
		}
	}
	if o.holder == nil {
		return release
	}
	byTarget := map[string][]*job{}
	var names []string
	for _, j := range jobs {
		if _, ok := byTarget[j.key.Target]; !ok {
			names = append(names, j.key.Target)
		}
		byTarget[j.key.Target] = append(byTarget[j.key.Target], j)
	}
	slices.Sort(names)
	for _, name := range names {
		path := lockPath(run.req.LockPath, lockSegment(name))
		fail := func(out Outcome, ph Phase, msg string) {
			for _, j := range byTarget[name] {
				finish(j, out, msg)
				run.report(j, ph, msg)
			}
		}
		if o.locks != nil {
			msgs, err := o.locks.Blocking(ctx, path, LockTypeDeploy)
			if err != nil {
				fail(OutcomeFailed, PhaseFailed, fmt.Sprintf("checking locks at %s: %v", path, err))
				continue
			}
			if len(msgs) > 0 {
				fail(OutcomeBlocked, PhaseBlocked, strings.Join(msgs, "; "))
				continue
			}
		}
		rel, err := o.holder.Hold(ctx, path, o.ttl(), o.author)
		if err != nil {
			fail(OutcomeFailed, PhaseFailed, fmt.Sprintf("taking deploy lock %s: %v", path, err))
			continue
		}
		releases = append(releases, rel)
		// The checker never reports the lock just held (it knows it by its
		// stored identity, the object's UID): whatever blocks the target now
		// is someone else's lock, taken in the instant after the check above,
		// and stops the target's patches.
		if o.locks != nil {
			msgs, err := o.locks.Blocking(ctx, path, LockTypeDeploy)
			if err != nil {
				fail(OutcomeFailed, PhaseFailed, fmt.Sprintf("checking locks at %s: %v", path, err))
				continue
			}
			if len(msgs) > 0 {
				fail(OutcomeBlocked, PhaseBlocked, strings.Join(msgs, "; "))
				continue
			}
		}
	}
	return release
}

// patchOne re-checks the locks of j's service, then patches only j's
// changed containers and records the revision and an Event. A lock found
// now marks j blocked and sends nothing.
func (run *applyRun) patchOne(ctx context.Context, j *job) error {
	if locks := run.a.o.locks; locks != nil {
		path := lockPath(run.req.LockPath, lockSegment(j.key.Target), lockSegment(j.service))
		var msgs []string
		var err error
		if j.recheck != nil {
			msgs, err = j.recheck.blocking(ctx, path)
		} else {
			msgs, err = locks.Blocking(ctx, path, LockTypeDeploy)
		}
		if err != nil {
			return fmt.Errorf("checking locks at %s: %w", path, err)
		}
		if len(msgs) > 0 {
			finish(j, OutcomeBlocked, strings.Join(msgs, "; "))
			return nil
		}
	}
	body, err := patchBody(j.key.Kind, run.req.Revision, j.changes)
	if err != nil {
		return err
	}
	obj, gen, err := patch(ctx, j.target, j.key, body)
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", j.key.Kind, j.key.Namespace, j.key.Name, err)
	}
	j.obj, j.gen = obj, gen
	return nil
}

// patchBody is workload.PatchBody of changes: a strategic merge patch
// naming only the changed containers (merged by name) and the revision
// annotation.
func patchBody(kind, revision string, changes []Change) ([]byte, error) {
	images := make([]workload.Container, len(changes))
	for i, c := range changes {
		images[i] = workload.Container{Name: c.Container, Image: c.To}
	}
	return workload.PatchBody(kind, revision, images)
}

func patch(ctx context.Context, t Target, k WorkloadKey, body []byte) (runtime.Object, int64, error) {
	kind, _, err := workload.Named(k.Kind)
	if err != nil {
		return nil, 0, err
	}
	return kind.Patch(ctx, t.cluster(), types.NamespacedName{Namespace: k.Namespace, Name: k.Name}, body)
}

// withRecorders returns targets with an EventWriter as the Recorder of each
// target that has none.
func (a *applier) withRecorders(targets []Target) []Target {
	out := slices.Clone(targets)
	host, _ := os.Hostname()
	for i := range out {
		if out[i].Recorder == nil {
			out[i].Recorder = NewEventWriter(out[i].Client, a.o.author+"@"+host)
		}
	}
	return out
}

// workloadEvent is a Kubernetes Event to record on a workload.
type workloadEvent struct {
	typ, reason, msg string
}

// event records e on j's workload through its target's Recorder, carrying
// the revision annotation. Once ctx ends (a shutdown) no more Events are
// sent: record.EventRecorder takes no context, and the Events left would
// hold up the exit.
func (run *applyRun) event(ctx context.Context, j *job, e workloadEvent) {
	if j.obj == nil || ctx.Err() != nil {
		return
	}
	j.target.Recorder.AnnotatedEventf(j.obj, map[string]string{RevisionAnnotation: run.req.Revision}, e.typ, e.reason, "%s", e.msg)
}

// describe is "app: a → b, init:migrate: c → d".
func describe(cs []Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s: %s → %s", c.Container, c.From, c.To)
	}
	return strings.Join(parts, ", ")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
