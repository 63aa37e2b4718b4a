package reconcile

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// rollout is one status read: done, failed, or still going with why.
type rollout struct {
	done, failed bool
	msg          string
}

// waitRollouts polls until every job's rollout finished or failed, or the
// rollout timeout passes, calling status with each new status message of a
// rollout still going and done once per job. Each poll lists each kind once
// per target that still has a job of that kind waiting, so the cost does not
// grow with the number of workloads.
func (r *Reconciler) waitRollouts(ctx context.Context, jobs []*job, status func(j *job, msg string), done func(j *job, ok bool, msg string)) {
	pending := map[WorkloadKey]*job{}
	last := map[WorkloadKey]string{}
	for _, j := range jobs {
		if j.key.Kind == KindCronJob { // a CronJob is rolled out once its spec is updated
			done(j, true, "job template updated")
			continue
		}
		pending[j.key] = j
		last[j.key] = "waiting for the controller"
	}
	deadline := time.Now().Add(r.o.rolloutTimeout)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			for k, j := range pending {
				done(j, false, fmt.Sprintf("stopped waiting: %v (last status: %s)", ctx.Err(), last[k]))
			}
			return
		case <-timer.C:
		}
		type tk struct{ target, namespace, kind string }
		lists := map[tk]Target{}
		for _, j := range pending {
			lists[tk{j.key.Target, j.key.Namespace, j.key.Kind}] = j.target
		}
		for l, t := range lists {
			ws, err := listWorkloads(ctx, t.Client, l.namespace, l.kind)
			if err != nil {
				for k := range pending {
					if k.Target == l.target && k.Kind == l.kind {
						last[k] = fmt.Sprintf("reading status: %v", err)
					}
				}
				continue
			}
			for _, w := range ws {
				k := WorkloadKey{Target: l.target, Namespace: w.Namespace, Kind: w.Kind, Name: w.Name}
				j, ok := pending[k]
				if !ok {
					continue
				}
				st := rolloutStatus(w.obj, j.gen)
				changed := st.msg != last[k]
				last[k] = st.msg
				switch {
				case st.done || st.failed:
					delete(pending, k)
					done(j, st.done, st.msg)
				case changed:
					status(j, st.msg)
				}
			}
		}
		if time.Now().After(deadline) {
			for k, j := range pending {
				done(j, false, fmt.Sprintf("rollout not finished after %s: %s", r.o.rolloutTimeout, last[k]))
			}
			return
		}
		timer.Reset(min(r.o.pollInterval, time.Until(deadline)+time.Millisecond))
	}
}

// rolloutStatus reads a workload's rollout, the way `kubectl rollout status`
// does. gen is the generation our patch produced.
func rolloutStatus(obj any, gen int64) rollout {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return deploymentStatus(o, gen)
	case *appsv1.StatefulSet:
		return statefulSetStatus(o, gen)
	case *appsv1.DaemonSet:
		return daemonSetStatus(o, gen)
	}
	return rollout{done: true, msg: "job template updated"}
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func observed(gen, current, observed int64) (rollout, bool) {
	if observed < max(gen, current) {
		return rollout{msg: fmt.Sprintf("waiting for the controller to observe generation %d (at %d)", max(gen, current), observed)}, false
	}
	return rollout{}, true
}

func deploymentStatus(d *appsv1.Deployment, gen int64) rollout {
	if r, ok := observed(gen, d.Generation, d.Status.ObservedGeneration); !ok {
		return r
	}
	if d.Spec.Paused {
		return rollout{failed: true, msg: "the Deployment is paused: its rollout cannot progress"}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return rollout{failed: true, msg: fmt.Sprintf("progress deadline exceeded: %s", c.Message)}
		}
	}
	want, s := replicas(d.Spec.Replicas), d.Status
	switch {
	case s.UpdatedReplicas < want:
		return rollout{msg: fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)}
	case s.Replicas > s.UpdatedReplicas:
		return rollout{msg: fmt.Sprintf("%d old replicas pending termination", s.Replicas-s.UpdatedReplicas)}
	case s.ReadyReplicas < want:
		return rollout{msg: fmt.Sprintf("%d of %d replicas ready", s.ReadyReplicas, want)}
	case s.AvailableReplicas < want:
		return rollout{msg: fmt.Sprintf("%d of %d replicas available", s.AvailableReplicas, want)}
	}
	return rollout{done: true, msg: fmt.Sprintf("%d of %d replicas updated and available", s.AvailableReplicas, want)}
}

func statefulSetStatus(st *appsv1.StatefulSet, gen int64) rollout {
	if r, ok := observed(gen, st.Generation, st.Status.ObservedGeneration); !ok {
		return r
	}
	if st.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return rollout{done: true, msg: "updateStrategy OnDelete: pods change when deleted"}
	}
	want, s := replicas(st.Spec.Replicas), st.Status
	if ru := st.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		if s.UpdatedReplicas < want-*ru.Partition {
			return rollout{msg: fmt.Sprintf("%d of %d replicas above partition %d updated", s.UpdatedReplicas, want-*ru.Partition, *ru.Partition)}
		}
		return rollout{done: true, msg: fmt.Sprintf("partitioned rollout: %d replicas updated", s.UpdatedReplicas)}
	}
	switch {
	case s.UpdatedReplicas < want || s.UpdateRevision != s.CurrentRevision:
		return rollout{msg: fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)}
	case s.ReadyReplicas < want:
		return rollout{msg: fmt.Sprintf("%d of %d replicas ready", s.ReadyReplicas, want)}
	case s.AvailableReplicas < want:
		return rollout{msg: fmt.Sprintf("%d of %d replicas available", s.AvailableReplicas, want)}
	}
	return rollout{done: true, msg: fmt.Sprintf("%d of %d replicas updated and ready", s.ReadyReplicas, want)}
}

func daemonSetStatus(ds *appsv1.DaemonSet, gen int64) rollout {
	if r, ok := observed(gen, ds.Generation, ds.Status.ObservedGeneration); !ok {
		return r
	}
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return rollout{done: true, msg: "updateStrategy OnDelete: pods change when deleted"}
	}
	s := ds.Status
	switch {
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return rollout{msg: fmt.Sprintf("%d of %d pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)}
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return rollout{msg: fmt.Sprintf("%d of %d updated pods available", s.NumberAvailable, s.DesiredNumberScheduled)}
	}
	return rollout{done: true, msg: fmt.Sprintf("%d of %d pods updated and available", s.NumberAvailable, s.DesiredNumberScheduled)}
}
