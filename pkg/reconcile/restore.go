package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// Restore puts the workloads of an apply back on the images they ran before
// it: each of undo.Changes (an applied plan's, From the image before, To the one
// the apply set) whose container still runs To is patched back to From, under
// the same deploy locks as Apply, and its rollout is waited for like Apply's
// (WithRolloutTimeout). A container that runs anything else now (its patch
// never went through, it was restored already, someone changed it since) is
// left alone, so Restore can be called again after an interruption and
// patches nothing twice. Each restored workload gets a RolledBack Warning
// Event saying why (undo.Reason). req's Revision is what the restored workloads
// are annotated with (the revision they ran before); its Environment is not
// needed. The Result's Plan lists the changes Restore made (From the failed
// image, To the one restored); workload failures are reported in it, not as
// an error.
func (r *Reconciler) Restore(ctx context.Context, req Request, undo Undo, opts ...Option) (*Result, error) {
	r, err := r.with(opts)
	if err != nil {
		return nil, err
	}
	return r.applier.restore(ctx, req, undo)
}

// Undo is what Restore puts back, and why.
type Undo struct {
	// Changes are an applied plan's changes: From the image before, To the
	// one the apply set.
	Changes []Change
	// Reason says why, in each restored workload's RolledBack Event.
	Reason string
}

// restore is Restore, with the call's options already applied.
func (a *applier) restore(ctx context.Context, req Request, undo Undo) (*Result, error) {
	targets := a.withRecorders(req.Targets)
	byName := map[string]Target{}
	for _, t := range targets {
		byName[t.Name] = t
	}
	env := ""
	if req.Environment != nil {
		env = req.Environment.Name
	}
	res := &Result{Plan: &Plan{Environment: env, Revision: req.Revision, Changes: []Change{}}}
	var jobs []*job
	for _, j := range groupJobs(&Plan{Changes: reversed(undo.Changes)}, targets) {
		t, ok := byName[j.key.Target]
		if !ok {
			return nil, fmt.Errorf("restoring %s: target %q is not configured", j.key, j.key.Target)
		}
		w, err := workload.Get(ctx, t.cluster(), j.key.Kind, types.NamespacedName{Namespace: j.key.Namespace, Name: j.key.Name})
		if err != nil {
			res.Workloads = append(res.Workloads, WorkloadResult{WorkloadKey: j.key, Service: j.service, Changes: j.changes,
				Outcome: OutcomeFailed, Message: fmt.Sprintf("reading %s %s/%s: %v", j.key.Kind, j.key.Namespace, j.key.Name, err)})
			continue
		}
		j.changes = stillFailed(w, j.changes)
		if len(j.changes) == 0 {
			continue // nothing of the apply runs there (any more)
		}
		// A Canary Flagger failed was rolled back by Flagger: its primary
		// serves the images from before, and the target, scaled to zero,
		// keeps the failed ones. Patching it back would be a second
		// rollback (canary.go).
		if _, failed, err := canaryFailedFor(ctx, t.Client, j.key); err != nil || failed {
			if err != nil {
				res.Workloads = append(res.Workloads, WorkloadResult{WorkloadKey: j.key, Service: j.service, Changes: j.changes,
					Outcome: OutcomeFailed, Message: err.Error()})
			}
			continue
		}
		res.Plan.Changes = append(res.Plan.Changes, j.changes...)
		jobs = append(jobs, j)
	}
	first := len(res.Workloads)
	for _, j := range jobs {
		res.Workloads = append(res.Workloads, WorkloadResult{WorkloadKey: j.key, Service: j.service, Changes: j.changes})
	}
	for i, j := range jobs {
		j.res = &res.Workloads[first+i]
	}
	res.Plan.PlanHash = Hash(env, req.Revision, res.Plan.Changes)
	if len(jobs) == 0 {
		return res, nil
	}
	run := a.run(req)
	run.deliver(ctx, jobs, func(patched []*job) {
		for _, j := range patched {
			run.event(ctx, j, workloadEvent{corev1.EventTypeWarning, "RolledBack", truncate(fmt.Sprintf("Rolled back: %s (%s)", describe(j.changes), undo.Reason), 1024)})
		}
	})
	return res, nil
}

// reversed is changes undone: From and To swapped, changes without a From
// (nothing known to go back to) left out.
func reversed(changes []Change) []Change {
	out := make([]Change, 0, len(changes))
	for _, c := range changes {
		if c.From == "" || c.From == c.To {
			continue
		}
		c.From, c.To = c.To, c.From
		out = append(out, c)
	}
	return out
}

// stillFailed keeps the changes whose container in w runs their From (the
// image the apply set) now.
func stillFailed(w *workload.Workload, changes []Change) []Change {
	running := map[string]string{}
	for _, c := range w.Containers {
		running[c.Name] = c.Image
	}
	var out []Change
	for _, c := range changes {
		if img, ok := running[c.Container]; ok && img == c.From {
			out = append(out, c)
		}
	}
	return out
}
