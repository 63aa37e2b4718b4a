package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// canaryRef is the Canary a job's workload is judged by.
type canaryRef struct {
	name string
	// before is the Canary's lastAppliedSpec before the patch: the hash of
	// the pod template Flagger last took up. Until it changes, what the
	// Canary says is about an earlier template, not about the patch.
	before string
	// next is when the Canary may be read again (at most one read per poll
	// interval, however many watch events wake the wait); last is what the
	// last read judged.
	next time.Time
	last workload.Status
}

// findCanaries gives each job whose workload a Canary targets that Canary
// (j.canary), read before the patch: one List per target and namespace
// that has a Deployment or DaemonSet to patch. A namespace whose Canaries
// cannot be listed (other than not served or not allowed) fails its jobs
// before anything is patched: judged by the workload's status instead,
// Flagger's workload would look rolled out while Flagger still analyses it.
func findCanaries(ctx context.Context, jobs []*job, report func(*job, Phase, string)) {
	type tn struct{ target, namespace string }
	byNS := map[tn][]*job{}
	var order []tn
	for _, j := range jobs {
		if j.res.Outcome != "" || !workload.IsCanaryKind(j.key.Kind) {
			continue
		}
		k := tn{j.key.Target, j.key.Namespace}
		if _, ok := byNS[k]; !ok {
			order = append(order, k)
		}
		byNS[k] = append(byNS[k], j)
	}
	for _, k := range order {
		js := byNS[k]
		cs, err := workload.ReadCanaries(ctx, js[0].target.Client, k.namespace)
		if err != nil {
			for _, j := range js {
				finish(j, OutcomeFailed, err.Error())
				report(j, PhaseFailed, j.res.Message)
			}
			continue
		}
		for _, j := range js {
			for _, c := range cs {
				if c.Spec.TargetRef.Kind == j.key.Kind && c.Spec.TargetRef.Name == j.key.Name {
					j.canary = &canaryRef{name: c.Metadata.Name, before: c.Status.LastAppliedSpec}
					break
				}
			}
		}
	}
}

// canaryRollout reads j's Canary (at most once per poll interval; the last
// judgement between) and judges j's rollout by it. A Canary deleted since
// the patch leaves j to be judged by its workload (j.canary nil, ok false).
func (rw *rolloutWatcher) canaryRollout(ctx context.Context, j *job) (st workload.Status, ok bool) {
	cr := j.canary
	if time.Now().Before(cr.next) {
		return cr.last, true
	}
	cr.next = time.Now().Add(rw.o.pollInterval)
	c, err := workload.ReadCanary(ctx, j.target.Client, j.key.Namespace, cr.name)
	switch {
	case err != nil:
		cr.last = workload.Status{Message: fmt.Sprintf("reading status: %v", err)}
		return cr.last, true
	case c == nil:
		j.canary = nil
		return workload.Status{}, false
	}
	cr.last = workload.JudgeCanary(c, cr.before, func() (string, bool, error) { return primaryRuns(ctx, j, c) })
	return cr.last, true
}

// primaryRuns says whether the primary Flagger made of j's workload
// (<name>-primary) runs every image j's changes set, and its name.
func primaryRuns(ctx context.Context, j *job, c *workload.Canary) (string, bool, error) {
	name := c.Spec.TargetRef.Name + "-primary"
	w, err := workload.Get(ctx, j.target.cluster(), j.key.Kind, types.NamespacedName{Namespace: j.key.Namespace, Name: name})
	if err != nil {
		return name, false, fmt.Errorf("reading %s %s/%s: %w", j.key.Kind, j.key.Namespace, name, err)
	}
	running := map[string]string{}
	for _, pc := range w.Containers {
		running[pc.Name] = pc.Image
	}
	for _, ch := range j.changes {
		if running[ch.Container] != ch.To {
			return name, false, nil
		}
	}
	return name, true, nil
}

// CanaryProgress says where each canary of changes waits, in the order of
// changes: a workload that a Canary targets and that Flagger is analysing
// now ("Deployment web on a: canary analysing: 3 of 5 iterations"), and an
// Argo Rollouts Rollout that is paused, at a step for a promotion ("Rollout
// api on a: paused at step 2 of 3: waiting for promotion") or otherwise. It
// lists the Canaries of each target namespace once and reads each Rollout
// once; a workload whose Canary is at rest (Succeeded, Failed,
// Initialized), that no Canary targets, a Rollout not paused, or what
// cannot be read says nothing. What an apply in flight shows while it
// waits for Flagger or a promotion (the daemon's status).
func CanaryProgress(ctx context.Context, targets []Target, changes []Change) []string {
	byName := map[string]Target{}
	for _, t := range targets {
		byName[t.Name] = t
	}
	type tn struct{ target, namespace string }
	read := map[tn][]workload.Canary{}
	var out []string
	seen := map[WorkloadKey]bool{}
	for _, ch := range changes {
		k := ch.Key()
		t, ok := byName[k.Target]
		if seen[k] || !ok {
			continue
		}
		seen[k] = true
		if k.Kind == workload.KindRollout {
			if msg, ok := rolloutPaused(ctx, t, k); ok {
				out = append(out, fmt.Sprintf("%s %s on %s: %s", k.Kind, k.Name, k.Target, msg))
			}
			continue
		}
		if !workload.IsCanaryKind(k.Kind) {
			continue
		}
		ns := tn{k.Target, k.Namespace}
		cs, ok := read[ns]
		if !ok {
			cs, _ = workload.ReadCanaries(ctx, t.Client, k.Namespace) // unreadable: nothing to say
			read[ns] = cs
		}
		for i := range cs {
			if cs[i].Spec.TargetRef.Kind != k.Kind || cs[i].Spec.TargetRef.Name != k.Name {
				continue
			}
			if msg, ok := cs[i].Analysing(); ok {
				out = append(out, fmt.Sprintf("%s %s on %s: %s", k.Kind, k.Name, k.Target, msg))
			}
			break
		}
	}
	return out
}

// rolloutPaused says where Rollout k of t is paused, if it is (read
// through t's dynamic client; none without one).
func rolloutPaused(ctx context.Context, t Target, k WorkloadKey) (string, bool) {
	if t.Dynamic == nil {
		return "", false
	}
	w, err := workload.Get(ctx, t.cluster(), k.Kind, types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
	if err != nil || w.Object == nil {
		return "", false // unreadable: nothing to say
	}
	st := workload.Judge(w.Object, 0)
	return st.Message, !st.Done && !st.Failed && strings.HasPrefix(st.Message, "paused")
}

// canaryFailed reports whether w's workload is the target of a Canary that
// Flagger has failed, and its name: Flagger has rolled it back itself, and
// Restore leaves it alone. Canaries that cannot be read are none.
func canaryFailedFor(ctx context.Context, c kubernetes.Interface, key WorkloadKey) (string, bool, error) {
	if !workload.IsCanaryKind(key.Kind) {
		return "", false, nil
	}
	cs, err := workload.ReadCanaries(ctx, c, key.Namespace)
	if err != nil {
		return "", false, err
	}
	for _, cn := range cs {
		if cn.Spec.TargetRef.Kind == key.Kind && cn.Spec.TargetRef.Name == key.Name {
			return cn.Metadata.Name, cn.Failed(), nil
		}
	}
	return "", false, nil
}
