package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// rolloutWatcher waits for patched workloads to roll out: from the
// target's watches while Watch runs, else with Lists, and through its
// Flagger Canary for a workload a Canary judges.
type rolloutWatcher struct {
	o     *options
	cache *watchCache
}

// eventGap is the least time between two reads of the watched rollouts.
const eventGap = 20 * time.Millisecond

// wait waits until every job's rollout finished or failed, or the
// rollout timeout passes, calling status with each new status (message) of a
// rollout still going (and every round for a Rollout paused for a
// promotion) and done once per job. While Watch runs, a job is read from its
// target's watches, which the wait starts if no plan has (a plan made before
// Watch ran listed), and the wait wakes on their events; the others, and
// every job without Watch, are polled with one List per kind per target
// that still has a job of that kind waiting, so the cost does not grow with
// the number of workloads.
func (rw *rolloutWatcher) wait(ctx context.Context, jobs []*job, status func(j *job, st workload.Status, changed bool), done func(j *job, st workload.Status)) {
	pending := map[WorkloadKey]*job{}
	last := map[WorkloadKey]string{}
	for _, j := range jobs {
		if k, _, err := workload.Named(j.key.Kind); err == nil && k.Patched() != "" { // rolled out once its spec is updated (a CronJob)
			done(j, workload.Status{Done: true, Message: k.Patched()})
			continue
		}
		pending[j.key] = j
		last[j.key] = "waiting for the controller"
	}
	judge := func(k WorkloadKey, j *job, st workload.Status) {
		changed := st.Message != last[k]
		last[k] = st.Message
		switch {
		case st.Done || st.Failed || st.OnDelete:
			delete(pending, k)
			done(j, st)
		case changed || st.Paused: // a paused Rollout is heard every round: a pause written again is promoted again
			status(j, st, changed)
		}
	}
	deadline := time.Now().Add(rw.o.rolloutTimeout)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var events <-chan struct{}
	var round time.Time
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			for k, j := range pending {
				done(j, workload.Status{Failed: true, Message: fmt.Sprintf("stopped waiting: %v (last status: %s)", ctx.Err(), last[k])})
			}
			return
		case <-timer.C:
		case <-events:
			// Many rollouts send many events: one round reads them all, at
			// most one round per eventGap.
			time.Sleep(time.Until(round.Add(eventGap)))
		}
		round = time.Now()
		events = rw.cache.events() // before reading: an event from now on wakes the next round
		type tk struct{ target, namespace, kind string }
		lists := map[tk]Target{}
		for k, j := range pending {
			if j.canary != nil { // judged by its Flagger Canary, not its own status
				if st, ok := rw.canaryRollout(ctx, j); ok {
					judge(k, j, st)
					continue
				}
			}
			if tw := rw.cache.of(j.target, rw.o.selectorLabel); tw != nil {
				if obj, ok := tw.get(k.Kind, k.Namespace, k.Name); ok {
					judge(k, j, workload.Judge(obj, j.gen))
					continue
				}
			}
			lists[tk{j.key.Target, j.key.Namespace, j.key.Kind}] = j.target
		}
		for l, t := range lists {
			ws, err := workload.List(ctx, t.cluster(), l.namespace, l.kind)
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
				if j, ok := pending[k]; ok {
					judge(k, j, workload.Judge(w.Object, j.gen))
				}
			}
		}
		if time.Now().After(deadline) {
			for k, j := range pending {
				done(j, workload.Status{Failed: true, Message: fmt.Sprintf("rollout not finished after %s: %s", rw.o.rolloutTimeout, last[k])})
			}
			return
		}
		timer.Reset(min(rw.o.pollInterval, time.Until(deadline)+time.Millisecond))
	}
}
