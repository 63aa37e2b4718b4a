package workload

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Status is one judgement of a rollout: done, failed, patched under an
// OnDelete update strategy (pods change when deleted), or still going with
// why.
type Status struct {
	Done, Failed, OnDelete bool
	// Paused is a Rollout paused at a step for a promotion: still going,
	// and promoted when the apply is told to. Pause then names the pause
	// (PromoteRollout promotes that one only).
	Paused  bool
	Pause   string
	Message string
}

// onDeleteMessage starts the message of a rollout left to pod deletions.
const onDeleteMessage = "patched, pods change when deleted"

// Judge judges a workload's rollout. gen is the generation our patch
// produced. kstatus (sigs.k8s.io/cli-utils, what Flux uses) decides, after
// three checks where Stagehand is deliberately stricter or more precise:
//
//   - the controller must have observed at least gen and the object's own
//     generation (kstatus skips the check when status.observedGeneration is
//     absent, and cannot know our patch's generation: a cache a moment behind
//     would show the old rollout, long done);
//   - a paused Deployment fails at once (kstatus waits for it forever);
//   - a StatefulSet or DaemonSet with updateStrategy OnDelete whose pods do not
//     all run the new revision is onDelete, not done (kstatus calls such a
//     StatefulSet current) nor waited for (its pods change when deleted).
//
// A workload being deleted has failed (kstatus: Terminating).
func Judge(obj runtime.Object, gen int64) Status {
	k := Of(obj)
	if k == nil {
		return Status{Failed: true, Message: fmt.Sprintf("cannot judge the rollout of a %T", obj)}
	}
	if k.patched != "" {
		return Status{Done: true, Message: k.patched}
	}
	meta, _, _ := k.pod(obj)
	if meta.DeletionTimestamp != nil {
		return Status{Failed: true, Message: fmt.Sprintf("the %s is being deleted", k.name)}
	}
	if k.judge != nil {
		return k.judge(obj, gen)
	}
	if r, ok := observedAt(gen, meta.Generation, k.observed(obj)); !ok {
		return r
	}
	if k.check != nil {
		if r, ok := k.check(obj); ok {
			return r
		}
	}
	return fromKstatus(obj, k)
}

// observedAt is Stagehand's generation check: the controller has observed
// the generation of our patch and the object's own.
func observedAt(gen, current, observed int64) (Status, bool) {
	if want := max(gen, current); observed < want {
		return Status{Message: fmt.Sprintf("waiting for the controller to observe generation %d (at %d)", want, observed)}, false
	}
	return Status{}, true
}

// statefulSetOnDelete judges an OnDelete StatefulSet: done once every pod
// runs the new revision and is ready, else onDelete. ok is false for other
// update strategies.
func statefulSetOnDelete(obj runtime.Object) (Status, bool) {
	o := obj.(*appsv1.StatefulSet)
	if o.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		return Status{}, false
	}
	want, s := replicas(o.Spec.Replicas), o.Status
	if s.UpdatedReplicas >= want && s.ReadyReplicas >= want && s.Replicas <= want {
		return Status{Done: true, Message: fmt.Sprintf("%d of %d pods run the new revision and are ready (updateStrategy OnDelete)", want, want)}, true
	}
	return Status{OnDelete: true, Message: fmt.Sprintf("%s (updateStrategy OnDelete): %d of %d pods run the new revision", onDeleteMessage, s.UpdatedReplicas, want)}, true
}

// daemonSetOnDelete judges an OnDelete DaemonSet as statefulSetOnDelete
// does a StatefulSet.
func daemonSetOnDelete(obj runtime.Object) (Status, bool) {
	o := obj.(*appsv1.DaemonSet)
	if o.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		return Status{}, false
	}
	s := o.Status
	if s.UpdatedNumberScheduled >= s.DesiredNumberScheduled && s.NumberReady >= s.DesiredNumberScheduled &&
		s.NumberAvailable >= s.DesiredNumberScheduled && s.CurrentNumberScheduled >= s.DesiredNumberScheduled {
		return Status{Done: true, Message: fmt.Sprintf("%d of %d pods run the new revision and are ready (updateStrategy OnDelete)", s.DesiredNumberScheduled, s.DesiredNumberScheduled)}, true
	}
	return Status{OnDelete: true, Message: fmt.Sprintf("%s (updateStrategy OnDelete): %d of %d pods run the new revision", onDeleteMessage, s.UpdatedNumberScheduled, s.DesiredNumberScheduled)}, true
}

// fromKstatus computes kstatus on obj.
func fromKstatus(obj runtime.Object, k *Kind) Status {
	u, err := toUnstructured(obj, k)
	if err != nil {
		return Status{Message: fmt.Sprintf("reading status: %v", err)}
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		return Status{Message: fmt.Sprintf("reading status: %v", err)}
	}
	return fromResult(res, k.name)
}

// fromResult maps a kstatus result: Current is done, Failed and Terminating
// have failed, anything else is still going.
// Messages are kstatus's, begun in lower case like Stagehand's own; a
// failure carries the message of the condition that failed it.
func fromResult(res *kstatus.Result, kind string) Status {
	msg := res.Message
	if msg != "" {
		msg = strings.ToLower(msg[:1]) + msg[1:]
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return Status{Done: true, Message: msg}
	case kstatus.FailedStatus:
		for _, c := range res.Conditions {
			if c.Type == kstatus.ConditionStalled && c.Message != "" {
				msg += ": " + c.Message
			}
		}
		return Status{Failed: true, Message: msg}
	case kstatus.TerminatingStatus:
		return Status{Failed: true, Message: fmt.Sprintf("the %s is being deleted", kind)}
	}
	return Status{Message: msg}
}

func toUnstructured(obj runtime.Object, k *Kind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", k.name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(k.APIVersion())
	u.SetKind(k.name)
	return u, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
