package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// KindRollout is Argo Rollouts' Rollout (argoproj.io/v1alpha1).
const KindRollout = "Rollout"

// RolloutGVR is the resource of Argo Rollouts' Rollouts.
var RolloutGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// workloadGenerationAnnotation is where Argo Rollouts' controller records, on
// a Rollout with a workloadRef, the generation of the referenced workload it
// has taken the pod template from.
const workloadGenerationAnnotation = "rollout.argoproj.io/workload-generation"

// argoRollout is the part of a Rollout Stagehand reads: its pod template (or
// the reference to the Deployment holding it), pause, steps and status.
// Rollouts are read through the dynamic client and converted to it, so
// pkg/reconcile needs no Argo Rollouts module.
type argoRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              argoSpec   `json:"spec"`
	Status            argoStatus `json:"status,omitempty"`
}

type argoSpec struct {
	Replicas    *int32                 `json:"replicas,omitempty"`
	Template    corev1.PodTemplateSpec `json:"template,omitempty"`
	WorkloadRef *argoRef               `json:"workloadRef,omitempty"`
	Paused      bool                   `json:"paused,omitempty"`
	Strategy    struct {
		Canary *argoCanary `json:"canary,omitempty"`
	} `json:"strategy"`
}

// argoCanary is a Rollout's canary strategy: its steps, counted only.
type argoCanary struct {
	Steps []json.RawMessage `json:"steps,omitempty"`
}

// argoPause is one of a Rollout's status.pauseConditions.
type argoPause struct {
	Reason    string `json:"reason"`
	StartTime string `json:"startTime,omitempty"`
}

// argoCanaryStatus is a Rollout's status.canary: how the analysis of its
// current step went.
type argoCanaryStatus struct {
	CurrentStepAnalysisRunStatus *struct {
		Status string `json:"status,omitempty"`
	} `json:"currentStepAnalysisRunStatus,omitempty"`
}

// argoRef is a Rollout's workloadRef.
type argoRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
}

type argoStatus struct {
	ObservedGeneration         string           `json:"observedGeneration,omitempty"`
	WorkloadObservedGeneration string           `json:"workloadObservedGeneration,omitempty"`
	Phase                      string           `json:"phase,omitempty"`
	Message                    string           `json:"message,omitempty"`
	Abort                      bool             `json:"abort,omitempty"`
	ControllerPause            bool             `json:"controllerPause,omitempty"`
	PauseConditions            []argoPause      `json:"pauseConditions,omitempty"`
	CurrentStepIndex           *int32           `json:"currentStepIndex,omitempty"`
	CurrentPodHash             string           `json:"currentPodHash,omitempty"`
	StableRS                   string           `json:"stableRS,omitempty"`
	Canary                     argoCanaryStatus `json:"canary,omitempty"`
}

// DeepCopyObject copies o through its JSON form: a Rollout is read once per
// event, never in a loop.
func (o *argoRollout) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(o)
	if err != nil {
		return &argoRollout{TypeMeta: o.TypeMeta, ObjectMeta: *o.ObjectMeta.DeepCopy()}
	}
	var c argoRollout
	if err := json.Unmarshal(b, &c); err != nil {
		return &argoRollout{TypeMeta: o.TypeMeta, ObjectMeta: *o.ObjectMeta.DeepCopy()}
	}
	return &c
}

// argoRolloutList is a list of Rollouts, the type the watch cache lists.
type argoRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []argoRollout `json:"items"`
}

// DeepCopyObject copies l.
func (l *argoRolloutList) DeepCopyObject() runtime.Object {
	c := &argoRolloutList{TypeMeta: l.TypeMeta, ListMeta: *l.ListMeta.DeepCopy(), Items: make([]argoRollout, len(l.Items))}
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*argoRollout)
	}
	return c
}

// argoKept is what the watch cache keeps of a Rollout for the judgement.
type argoKept struct {
	spec       argoSpec // without the pod template
	status     argoStatus
	workloadAt string // the workload-generation annotation
}

// rolloutKind is the table entry of Argo Rollouts' Rollout. A Rollout is
// patched like a Deployment, but by a JSON patch that names each container by
// its index and tests its name (a custom resource takes no strategic merge
// patch, and a merge patch would replace the whole container list); a Rollout
// whose pod template lives in a Deployment (workloadRef) is patched through
// that Deployment and judged by the Rollout.
func rolloutKind() Kind {
	return Kind{
		name:    KindRollout,
		gvr:     RolloutGVR,
		example: &argoRollout{},
		crdAPI:  rolloutAPI,
		pod: func(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
			if o, ok := obj.(*argoRollout); ok {
				return &o.ObjectMeta, &o.Spec.Template.Spec, true
			}
			return nil, nil, false
		},
		templatePath: []string{"template"},
		keep: func(obj runtime.Object, c *Cached) {
			o := obj.(*argoRollout)
			spec := o.Spec
			spec.Template = corev1.PodTemplateSpec{}
			c.status = &argoKept{spec: spec, status: o.Status, workloadAt: o.Annotations[workloadGenerationAnnotation]}
		},
		object: func(c *Cached, meta metav1.ObjectMeta) runtime.Object {
			k := c.status.(*argoKept)
			if k.workloadAt != "" {
				meta.Annotations = map[string]string{workloadGenerationAnnotation: k.workloadAt}
			}
			return &argoRollout{ObjectMeta: meta, Spec: k.spec, Status: k.status}
		},
		observed: func(obj runtime.Object) int64 { return atoi(obj.(*argoRollout).Status.ObservedGeneration) },
		judge:    judgeRollout,
		patchFn:  patchRollout,
	}
}

// rolloutAPI reaches Rollouts through t's dynamic client, converting them
// to argoRollout; a Rollout with a workloadRef gets the pod template of the
// Deployment it references (one Get through t's client).
func rolloutAPI(t Cluster, ns string) API {
	ri := t.Dynamic.Resource(RolloutGVR).Namespace(ns)
	resolve := func(ctx context.Context, u *unstructured.Unstructured) (*argoRollout, error) {
		o, err := toRollout(u)
		if err != nil {
			return nil, err
		}
		return o, resolveRef(ctx, t, o)
	}
	return API{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := ri.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			out := &argoRolloutList{ListMeta: metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue()},
				Items: make([]argoRollout, 0, len(l.Items))}
			for i := range l.Items {
				o, err := resolve(ctx, &l.Items[i])
				if err != nil {
					return nil, err
				}
				out.Items = append(out.Items, *o)
			}
			return out, nil
		},
		Items: func(l runtime.Object) []runtime.Object {
			if l, ok := l.(*argoRolloutList); ok {
				return pointers(l.Items)
			}
			return nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := ri.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if u, ok := e.Object.(*unstructured.Unstructured); ok {
					o, err := resolve(ctx, u)
					if err != nil {
						// the Rollout without its Deployment's template: its
						// next event (the controller's) resolves it again
						o, _ = toRollout(u)
					}
					if o != nil {
						e.Object = o
					}
				}
				return e, true
			}), nil
		},
		Get: func(ctx context.Context, name string, opts metav1.GetOptions) (runtime.Object, error) {
			u, err := ri.Get(ctx, name, opts)
			if err != nil {
				return nil, err
			}
			return resolve(ctx, u)
		},
		Patch: func(ctx context.Context, name string, pt types.PatchType, body []byte, opts metav1.PatchOptions) (runtime.Object, error) {
			u, err := ri.Patch(ctx, name, pt, body, opts)
			if err != nil {
				return nil, err
			}
			return resolve(ctx, u)
		},
	}
}

func toRollout(u *unstructured.Unstructured) (*argoRollout, error) {
	var o argoRollout
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		return nil, fmt.Errorf("reading Rollout %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &o, nil
}

// resolveRef fills o's pod template from the Deployment its workloadRef
// names. Argo Rollouts references Deployments, ReplicaSets and PodTemplates;
// Stagehand patches through Deployments only, and says so for the others.
func resolveRef(ctx context.Context, t Cluster, o *argoRollout) error {
	ref := o.Spec.WorkloadRef
	if ref == nil {
		return nil
	}
	if ref.Kind != KindDeployment {
		return fmt.Errorf("reading Rollout %s/%s: workloadRef kind %q: only a Deployment is supported", o.Namespace, o.Name, ref.Kind)
	}
	d, err := t.Client.AppsV1().Deployments(o.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Deployment %s/%s of Rollout %s's workloadRef: %w", o.Namespace, ref.Name, o.Name, err)
	}
	o.Spec.Template = d.Spec.Template
	return nil
}

// patchRollout patches the images of a Rollout as body (patchBody's
// strategic merge patch) says: a Rollout with a workloadRef through its
// Deployment (gen is then the Deployment's generation), any other by a JSON
// patch of the Rollout itself.
func patchRollout(ctx context.Context, t Cluster, key types.NamespacedName, body []byte) (runtime.Object, int64, error) {
	ns, name := key.Namespace, key.Name
	api := rolloutAPI(t, ns)
	u, err := t.Dynamic.Resource(RolloutGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, 0, err
	}
	o, err := toRollout(u)
	if err != nil {
		return nil, 0, err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	if ref := o.Spec.WorkloadRef; ref != nil {
		if ref.Kind != KindDeployment {
			return nil, 0, fmt.Errorf("workloadRef kind %q: only a Deployment is supported", ref.Kind)
		}
		d, err := t.Client.AppsV1().Deployments(ns).Patch(ctx, ref.Name, types.StrategicMergePatchType, body, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("patching the Deployment %s/%s of its workloadRef: %w", ns, ref.Name, err)
		}
		rev, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{RevisionAnnotation: d.Annotations[RevisionAnnotation]}}})
		if err != nil {
			return nil, 0, err
		}
		obj, err := api.Patch(ctx, name, types.MergePatchType, rev, opts)
		if err != nil {
			return nil, 0, err
		}
		return obj, d.Generation, nil
	}
	ops, err := rolloutOps(o, body)
	if err != nil {
		return nil, 0, err
	}
	obj, err := api.Patch(ctx, name, types.JSONPatchType, ops, opts)
	if err != nil {
		return nil, 0, err
	}
	return obj, obj.(*argoRollout).Generation, nil
}

// strategicBody is the shape of patchBody's patch under a "template" path.
type strategicBody struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers     []Container `json:"containers"`
				InitContainers []Container `json:"initContainers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// rolloutOps turns body into a JSON patch of o: each changed container's
// image replaced at its index after a test of its name (a container moved
// meanwhile fails the patch rather than changing another), and the
// annotations set.
func rolloutOps(o *argoRollout, body []byte) ([]byte, error) {
	var b strategicBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("reading patch: %w", err)
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	images := func(field string, have []corev1.Container, want []Container) error {
		for _, w := range want {
			i := -1
			for j := range have {
				if have[j].Name == w.Name {
					i = j
				}
			}
			if i < 0 {
				return fmt.Errorf("patching Rollout %s/%s: no %s named %q", o.Namespace, o.Name, strings.TrimSuffix(field, "s"), w.Name)
			}
			p := fmt.Sprintf("/spec/template/spec/%s/%d", field, i)
			ops = append(ops, op{"test", p + "/name", w.Name}, op{"replace", p + "/image", w.Image})
		}
		return nil
	}
	if err := images("containers", o.Spec.Template.Spec.Containers, b.Spec.Template.Spec.Containers); err != nil {
		return nil, err
	}
	if err := images("initContainers", o.Spec.Template.Spec.InitContainers, b.Spec.Template.Spec.InitContainers); err != nil {
		return nil, err
	}
	if o.Annotations == nil {
		ops = append(ops, op{"add", "/metadata/annotations", b.Metadata.Annotations})
	} else {
		for k, v := range b.Metadata.Annotations {
			ops = append(ops, op{"add", "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k), v})
		}
	}
	return json.Marshal(ops)
}

// judgeRollout judges a Rollout's rollout from its status as Argo Rollouts
// computes it (status.phase, which `kubectl argo rollouts status` reads),
// once the controller has observed gen: the Rollout's generation of our
// patch, or with a workloadRef the referenced Deployment's. Healthy is done;
// Degraded or aborted (a failed analysis, a progress deadline) has failed;
// paused at a canary step for a promotion is still going, marked paused.
func judgeRollout(obj runtime.Object, gen int64) Status {
	o := obj.(*argoRollout)
	st := o.Status
	if o.Spec.WorkloadRef != nil {
		if r, ok := observedAt(0, o.Generation, atoi(st.ObservedGeneration)); !ok {
			return r
		}
		if at := atoi(o.Annotations[workloadGenerationAnnotation]); at < gen || atoi(st.WorkloadObservedGeneration) < gen {
			return Status{Message: fmt.Sprintf("waiting for Argo Rollouts to observe generation %d of the Deployment %s (at %d)",
				gen, o.Spec.WorkloadRef.Name, min(at, atoi(st.WorkloadObservedGeneration)))}
		}
	} else if r, ok := observedAt(gen, o.Generation, atoi(st.ObservedGeneration)); !ok {
		return r
	}
	if st.ControllerPause && len(st.PauseConditions) == 0 {
		return Status{Message: "waiting for the Rollout to resume"}
	}
	if st.Abort {
		return Status{Failed: true, Message: "aborted: " + orPhase(st)}
	}
	switch st.Phase {
	case "Healthy":
		if st.StableRS != "" {
			return Status{Done: true, Message: fmt.Sprintf("healthy: ReplicaSet %s-%s is stable", o.Name, st.StableRS)}
		}
		return Status{Done: true, Message: "healthy"}
	case "Degraded":
		return Status{Failed: true, Message: "degraded: " + orPhase(st)}
	case "Paused":
		return pausedRollout(o)
	}
	return Status{Message: strings.ToLower(orPhase(st))}
}

// PausedForPromotion ends the message of a Rollout paused at a step.
const PausedForPromotion = "waiting for promotion"

// pausedRollout says where o is paused: at a canary step for a promotion
// ("paused at step 3 of 5: waiting for promotion", which Stagehand may
// promote), or by its spec (someone paused it: waited for, never promoted).
func pausedRollout(o *argoRollout) Status {
	if o.Spec.Paused {
		return Status{Message: "paused by spec.paused: waiting for someone to resume it"}
	}
	for _, c := range o.Status.PauseConditions {
		if c.Reason != "CanaryPauseStep" && c.Reason != "BlueGreenPause" {
			return Status{Message: fmt.Sprintf("paused (%s): %s", c.Reason, orPhase(o.Status))}
		}
	}
	if c := o.Spec.Strategy.Canary; c != nil && o.Status.CurrentStepIndex != nil {
		return Status{Paused: true, Pause: pauseOf(o), Message: fmt.Sprintf("paused at step %d of %d: %s", *o.Status.CurrentStepIndex+1, len(c.Steps), PausedForPromotion)}
	}
	return Status{Paused: true, Pause: pauseOf(o), Message: "paused: " + PausedForPromotion}
}

func orPhase(st argoStatus) string {
	switch {
	case st.Message != "":
		return st.Message
	case st.Phase != "":
		return st.Phase
	}
	return "no status yet"
}

// atoi reads a generation written as a string; anything else is 0.
func atoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
