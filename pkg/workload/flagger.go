package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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

// Failed reports whether Flagger has failed c's analysis (and rolled its
// target back itself).
func (c *Canary) Failed() bool { return c.Status.Phase == canaryFailed }

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

// Canary is the part of a Canary Stagehand reads.
type Canary struct {
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

// ReadCanaries lists the Canaries of namespace. A namespace where Canaries
// cannot be read — Flagger's CRD is not installed, or Stagehand is not
// allowed to read them (the chart's flagger.enabled is off) — has none.
func ReadCanaries(ctx context.Context, c kubernetes.Interface, namespace string) ([]Canary, error) {
	rc, ok := canaryClient(c)
	if !ok {
		return nil, nil
	}
	b, err := rc.Get().AbsPath(canaryPath, namespace, "canaries").SetHeader("Accept", "application/json").Do(ctx).Raw()
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing Flagger Canaries in %s: %w", namespace, err)
	}
	var l struct {
		Items []Canary `json:"items"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("decoding the Flagger Canaries of %s: %w", namespace, err)
	}
	return l.Items, nil
}

// ReadCanary reads Canary namespace/name; nil when it is gone.
func ReadCanary(ctx context.Context, c kubernetes.Interface, namespace, name string) (*Canary, error) {
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
	var o Canary
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("decoding Flagger Canary %s/%s: %w", namespace, name, err)
	}
	return &o, nil
}

func IsCanaryKind(kind string) bool {
	for _, k := range canaryKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// JudgeCanary judges a rollout by Canary c, given the Canary's
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
func JudgeCanary(c *Canary, before string, primary func() (name string, runs bool, err error)) Status {
	name, st := c.Metadata.Name, c.Status
	if c.Metadata.DeletionTimestamp != nil || st.Phase == canaryTerminating || st.Phase == canaryTerminated {
		return Status{Failed: true, Message: fmt.Sprintf("the Flagger Canary %s is being deleted", name)}
	}
	taken := st.LastAppliedSpec != before
	switch {
	case !taken && (st.Phase == canaryInitialized || st.Phase == canarySucceeded || st.Phase == canaryFailed):
		p, runs, err := primary()
		if err != nil {
			return Status{Message: fmt.Sprintf("reading status: %v", err)}
		}
		if runs {
			return Status{Done: true, Message: fmt.Sprintf("canary %s: the primary %s runs the new images already (nothing for Flagger to analyse)", name, p)}
		}
		return Status{Message: fmt.Sprintf("waiting for Flagger to start the analysis of canary %s (%s)", name, phaseOr(st.Phase))}
	case !taken:
		return Status{Message: fmt.Sprintf("waiting for Flagger to start the analysis of canary %s (%s)", name, phaseOr(st.Phase))}
	}
	if msg, ok := c.Analysing(); ok {
		return Status{Message: msg}
	}
	switch st.Phase {
	case canarySucceeded:
		p, runs, err := primary()
		switch {
		case err != nil:
			return Status{Message: fmt.Sprintf("reading status: %v", err)}
		case !runs:
			return Status{Failed: true, Message: fmt.Sprintf("canary %s succeeded, but its primary %s does not run the images of this apply: Flagger promoted another pod template", name, p)}
		}
		return Status{Done: true, Message: fmt.Sprintf("canary %s succeeded: Flagger promoted the new images to %s", name, p)}
	case canaryFailed:
		msg := fmt.Sprintf("canary %s failed", name)
		if m := promotedMessage(c); m != "" {
			msg += ": " + strings.TrimSuffix(m, ".")
		}
		return Status{Failed: true, Message: msg + "; Flagger rolled back: its primary serves the images from before"}
	}
	return Status{Message: fmt.Sprintf("canary %s: %s", name, phaseOr(st.Phase))}
}

// Analysing says where Flagger's analysis of c stands while it runs
// (Progressing, the phases that wait for a webhook, the promotion); ok is
// false in the other phases.
func (c *Canary) Analysing() (msg string, ok bool) {
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

// analysisProgress is where an analysis stands: "3 of 5 iterations" (the
// kubernetes provider, A/B testing, blue/green) or "weight 20 of 50" (a
// mesh's progressive traffic), with the failed checks against the
// threshold.
func analysisProgress(c *Canary) string {
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
func promotedMessage(c *Canary) string {
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

// canaryPrimary reports whether obj is a primary Flagger made of a Canary's
// target: controlled by a flagger.app Canary. The planner never maps a
// service to it: Flagger, not Stagehand, sets its pod template.
func canaryPrimary(m *metav1.ObjectMeta) bool {
	if c := metav1.GetControllerOfNoCopy(m); c != nil {
		return c.Kind == "Canary" && strings.HasPrefix(c.APIVersion, "flagger.app/")
	}
	return false
}
