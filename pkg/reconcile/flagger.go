package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Flagger (github.com/fluxcd/flagger) moves a workload that a Canary
// (flagger.app/v1beta1) targets: it copies the workload to <name>-primary,
// which serves, scales the workload itself to zero, and when the workload's
// pod template changes, scales it up as the canary, analyses it (webhooks,
// metrics) and either promotes it (copies its template to the primary) or
// fails it and scales it down again, the primary untouched: Flagger's own
// rollback. Stagehand patches the target as for any workload, and judges
// the rollout by the Canary, not by the workload's status.

// canaryPath is where a namespace's Canaries are served.
const canaryPath = "/apis/flagger.app/v1beta1/namespaces"

// canaryKinds are the kinds a Canary can target that are workloads here.
var canaryKinds = []string{KindDeployment, KindDaemonSet}

// Flagger's phases of a Canary (its CanaryPhase).
const (
	canaryInitializing     = "Initializing"
	canaryInitialized      = "Initialized"
	canaryWaiting          = "Waiting"
	canaryProgressing      = "Progressing"
	canaryWaitingPromotion = "WaitingPromotion"
	canaryPromoting        = "Promoting"
	canaryFinalising       = "Finalising"
	canarySucceeded        = "Succeeded"
	canaryFailed           = "Failed"
	canaryTerminating      = "Terminating"
	canaryTerminated       = "Terminated"
)

// canaryObject is the part of a Canary Stagehand reads.
type canaryObject struct {
	Metadata struct {
		Name              string       `json:"name"`
		Namespace         string       `json:"namespace"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	} `json:"metadata"`
	Spec struct {
		TargetRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"targetRef"`
		Analysis *struct {
			Iterations  int   `json:"iterations"`
			Threshold   int   `json:"threshold"`
			MaxWeight   int   `json:"maxWeight"`
			StepWeight  int   `json:"stepWeight"`
			StepWeights []int `json:"stepWeights"`
		} `json:"analysis"`
	} `json:"spec"`
	Status struct {
		Phase           string `json:"phase"`
		FailedChecks    int    `json:"failedChecks"`
		CanaryWeight    int    `json:"canaryWeight"`
		Iterations      int    `json:"iterations"`
		LastAppliedSpec string `json:"lastAppliedSpec"`
		Conditions      []struct {
			Type    string `json:"type"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

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
	last rollout
}

// canaryClient is the REST client Canaries are read with: the target's
// typed client's, whose transport, credentials and rate limit the Canary
// reads share. ok is false for a clientset without one (client-go's fake).
func canaryClient(c kubernetes.Interface) (rest.Interface, bool) {
	rc := c.AppsV1().RESTClient()
	if r, isREST := rc.(*rest.RESTClient); rc == nil || (isREST && r == nil) {
		return nil, false
	}
	return rc, true
}

// errNoCanaries is a namespace where Canaries cannot be read: Flagger's CRD
// is not installed, or Stagehand is not allowed to read them (the chart's
// flagger.enabled is off).
var errNoCanaries = errors.New("no Canaries")

// readCanaries lists the Canaries of namespace; errNoCanaries when there
// are none to read.
func readCanaries(ctx context.Context, c kubernetes.Interface, namespace string) ([]canaryObject, error) {
	rc, ok := canaryClient(c)
	if !ok {
		return nil, errNoCanaries
	}
	b, err := rc.Get().AbsPath(canaryPath, namespace, "canaries").SetHeader("Accept", "application/json").Do(ctx).Raw()
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, errNoCanaries
	}
	if err != nil {
		return nil, fmt.Errorf("listing Flagger Canaries in %s: %w", namespace, err)
	}
	var l struct {
		Items []canaryObject `json:"items"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("decoding the Flagger Canaries of %s: %w", namespace, err)
	}
	return l.Items, nil
}

// readCanary reads Canary namespace/name; nil when it is gone.
func readCanary(ctx context.Context, c kubernetes.Interface, namespace, name string) (*canaryObject, error) {
	rc, ok := canaryClient(c)
	if !ok {
		return nil, nil
	}
	b, err := rc.Get().AbsPath(canaryPath, namespace, "canaries", name).SetHeader("Accept", "application/json").Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Flagger Canary %s/%s: %w", namespace, name, err)
	}
	var o canaryObject
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("decoding Flagger Canary %s/%s: %w", namespace, name, err)
	}
	return &o, nil
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
		if j.res.Outcome != "" || !isCanaryKind(j.key.Kind) {
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
		cs, err := readCanaries(ctx, js[0].target.Client, k.namespace)
		if errors.Is(err, errNoCanaries) {
			continue
		}
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

func isCanaryKind(kind string) bool {
	for _, k := range canaryKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// canaryRollout reads j's Canary (at most once per poll interval; the last
// judgement between) and judges j's rollout by it. A Canary deleted since
// the patch leaves j to be judged by its workload (j.canary nil, ok false).
func (r *Reconciler) canaryRollout(ctx context.Context, j *job) (st rollout, ok bool) {
	cr := j.canary
	if time.Now().Before(cr.next) {
		return cr.last, true
	}
	cr.next = time.Now().Add(r.o.pollInterval)
	c, err := readCanary(ctx, j.target.Client, j.key.Namespace, cr.name)
	switch {
	case err != nil:
		cr.last = rollout{msg: fmt.Sprintf("reading status: %v", err)}
		return cr.last, true
	case c == nil:
		j.canary = nil
		return rollout{}, false
	}
	cr.last = judgeCanary(c, cr.before, func() (string, bool, error) { return primaryRuns(ctx, j, c) })
	return cr.last, true
}

// primaryRuns says whether the primary Flagger made of j's workload
// (<name>-primary) runs every image j's changes set, and its name.
func primaryRuns(ctx context.Context, j *job, c *canaryObject) (string, bool, error) {
	name := c.Spec.TargetRef.Name + "-primary"
	w, err := getWorkload(ctx, j.target, j.key.Namespace, j.key.Kind, name)
	if err != nil {
		return name, false, fmt.Errorf("reading %s %s/%s: %w", j.key.Kind, j.key.Namespace, name, err)
	}
	running := map[string]string{}
	for _, pc := range w.containers() {
		running[pc.Name] = pc.Image
	}
	for _, ch := range j.changes {
		if running[ch.Container] != ch.To {
			return name, false, nil
		}
	}
	return name, true, nil
}

// judgeCanary judges a rollout by Canary c, given the Canary's
// lastAppliedSpec before the patch and a way to ask whether the primary
// runs the patch's images (and its name):
//
//   - until Flagger takes the patched template up (lastAppliedSpec moves),
//     the Canary speaks of an earlier one: waiting, unless the primary runs
//     the images already and Flagger has nothing to analyse (a template put
//     back to the one it promoted last, which Flagger does not analyse; a
//     Canary initialised after the patch);
//   - Progressing and the phases that wait for a webhook are still going,
//     with where the analysis stands ("canary analysing: 3 of 5 iterations");
//   - Succeeded is done once the primary runs the new images (a failure
//     when it runs others: Flagger promoted a later template);
//   - Failed is a failed rollout with Flagger's message: Flagger has put
//     traffic back on the primary and scaled the canary down itself.
func judgeCanary(c *canaryObject, before string, primary func() (name string, runs bool, err error)) rollout {
	name, st := c.Metadata.Name, c.Status
	if c.Metadata.DeletionTimestamp != nil || st.Phase == canaryTerminating || st.Phase == canaryTerminated {
		return rollout{failed: true, msg: fmt.Sprintf("the Flagger Canary %s is being deleted", name)}
	}
	taken := st.LastAppliedSpec != before
	switch {
	case !taken && (st.Phase == canaryInitialized || st.Phase == canarySucceeded || st.Phase == canaryFailed):
		p, runs, err := primary()
		if err != nil {
			return rollout{msg: fmt.Sprintf("reading status: %v", err)}
		}
		if runs {
			return rollout{done: true, msg: fmt.Sprintf("canary %s: the primary %s runs the new images already (nothing for Flagger to analyse)", name, p)}
		}
		return rollout{msg: fmt.Sprintf("waiting for Flagger to start the analysis of canary %s (%s)", name, phaseOr(st.Phase))}
	case !taken:
		return rollout{msg: fmt.Sprintf("waiting for Flagger to start the analysis of canary %s (%s)", name, phaseOr(st.Phase))}
	}
	if msg, ok := analysing(c); ok {
		return rollout{msg: msg}
	}
	switch st.Phase {
	case canarySucceeded:
		p, runs, err := primary()
		switch {
		case err != nil:
			return rollout{msg: fmt.Sprintf("reading status: %v", err)}
		case !runs:
			return rollout{failed: true, msg: fmt.Sprintf("canary %s succeeded, but its primary %s does not run the images of this apply: Flagger promoted another pod template", name, p)}
		}
		return rollout{done: true, msg: fmt.Sprintf("canary %s succeeded: Flagger promoted the new images to %s", name, p)}
	case canaryFailed:
		msg := fmt.Sprintf("canary %s failed", name)
		if m := promotedMessage(c); m != "" {
			msg += ": " + strings.TrimSuffix(m, ".")
		}
		return rollout{failed: true, msg: msg + "; Flagger rolled back: its primary serves the images from before"}
	}
	return rollout{msg: fmt.Sprintf("canary %s: %s", name, phaseOr(st.Phase))}
}

// analysing says where Flagger's analysis of c stands while it runs
// (Progressing, the phases that wait for a webhook, the promotion); ok is
// false in the other phases.
func analysing(c *canaryObject) (msg string, ok bool) {
	name := c.Metadata.Name
	switch p := c.Status.Phase; p {
	case canaryProgressing:
		return "canary analysing: " + analysisProgress(c), true
	case canaryWaiting:
		return fmt.Sprintf("canary %s waiting for its confirm-rollout webhook to start the analysis", name), true
	case canaryWaitingPromotion:
		return fmt.Sprintf("canary %s analysed, waiting for its confirm-promotion webhook", name), true
	case canaryPromoting, canaryFinalising:
		return fmt.Sprintf("canary %s passed its analysis: Flagger is promoting it (%s)", name, p), true
	}
	return "", false
}

// CanaryProgress says where Flagger's analysis stands of each workload of
// changes that a Canary targets and that Flagger is analysing now: "Deployment
// web on a: canary analysing: 3 of 5 iterations", in the order of changes.
// It lists the Canaries of each target namespace once; a workload whose
// Canary is at rest (Succeeded, Failed, Initialized), that no Canary targets,
// or whose namespace's Canaries cannot be read says nothing. What an
// apply in flight shows while it waits for Flagger (the daemon's status).
func CanaryProgress(ctx context.Context, targets []Target, changes []Change) []string {
	byName := map[string]Target{}
	for _, t := range targets {
		byName[t.Name] = t
	}
	type tn struct{ target, namespace string }
	read := map[tn][]canaryObject{}
	var out []string
	seen := map[WorkloadKey]bool{}
	for _, ch := range changes {
		k := ch.Key()
		t, ok := byName[k.Target]
		if seen[k] || !ok || !isCanaryKind(k.Kind) {
			continue
		}
		seen[k] = true
		ns := tn{k.Target, k.Namespace}
		cs, ok := read[ns]
		if !ok {
			cs, _ = readCanaries(ctx, t.Client, k.Namespace) // unreadable: nothing to say
			read[ns] = cs
		}
		for i := range cs {
			if cs[i].Spec.TargetRef.Kind != k.Kind || cs[i].Spec.TargetRef.Name != k.Name {
				continue
			}
			if msg, ok := analysing(&cs[i]); ok {
				out = append(out, fmt.Sprintf("%s %s on %s: %s", k.Kind, k.Name, k.Target, msg))
			}
			break
		}
	}
	return out
}

// analysisProgress is where an analysis stands: "3 of 5 iterations" (the
// kubernetes provider, A/B testing, blue/green) or "weight 20 of 50" (a
// mesh's progressive traffic), with the failed checks against the
// threshold.
func analysisProgress(c *canaryObject) string {
	st, a := c.Status, c.Spec.Analysis
	var s string
	switch {
	case a != nil && a.Iterations > 0:
		s = fmt.Sprintf("%d of %d iterations", st.Iterations, a.Iterations)
	case a != nil && len(a.StepWeights) > 0:
		s = fmt.Sprintf("weight %d of %d", st.CanaryWeight, a.StepWeights[len(a.StepWeights)-1])
	case a != nil && a.MaxWeight > 0:
		s = fmt.Sprintf("weight %d of %d", st.CanaryWeight, a.MaxWeight)
	default:
		s = fmt.Sprintf("weight %d", st.CanaryWeight)
	}
	if st.FailedChecks > 0 {
		threshold := 1
		if a != nil && a.Threshold > 0 {
			threshold = a.Threshold
		}
		s += fmt.Sprintf(", %d of %d failed checks allowed", st.FailedChecks, threshold)
	}
	return s
}

// promotedMessage is the message of the Canary's Promoted condition.
func promotedMessage(c *canaryObject) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Promoted" {
			return cond.Message
		}
	}
	return ""
}

func phaseOr(p string) string {
	if p == "" {
		return "no phase yet"
	}
	return p
}

// canaryFailed reports whether w's workload is the target of a Canary that
// Flagger has failed, and its name: Flagger has rolled it back itself, and
// Restore leaves it alone. Canaries that cannot be read are none.
func canaryFailedFor(ctx context.Context, c kubernetes.Interface, key WorkloadKey) (string, bool, error) {
	if !isCanaryKind(key.Kind) {
		return "", false, nil
	}
	cs, err := readCanaries(ctx, c, key.Namespace)
	if errors.Is(err, errNoCanaries) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	for _, cn := range cs {
		if cn.Spec.TargetRef.Kind == key.Kind && cn.Spec.TargetRef.Name == key.Name {
			return cn.Metadata.Name, cn.Status.Phase == canaryFailed, nil
		}
	}
	return "", false, nil
}

// canaryPrimary reports whether obj is a primary Flagger made of a Canary's
// target: controlled by a flagger.app Canary. The planner never maps a
// service to it: Flagger, not Stagehand, sets its pod template.
func canaryPrimary(m *metav1.ObjectMeta) bool {
	if c := metav1.GetControllerOfNoCopy(m); c != nil {
		return c.Kind == "Canary" && strings.HasPrefix(c.APIVersion, "flagger.app/")
	}
	return false
}
