package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Analysis runs an Argo Rollouts AnalysisTemplate (or, with Cluster, a
// ClusterAnalysisTemplate) as an AnalysisRun in one of the environment's
// targets, and judges by the run's phase as Argo Rollouts' controller
// computes it: Successful passes, Inconclusive warns, Failed and Error fail.
// The template's arguments get Args, and besides them, when it declares
// them, stagehand-environment, stagehand-revision and stagehand-versions
// (a JSON object of service to version).
type Analysis struct {
	Template string            `json:"template"`
	Cluster  bool              `json:"cluster,omitempty"`
	Args     map[string]string `json:"args,omitempty"`
	// Target is the name of the environment's target whose namespace runs
	// the AnalysisRun (default: the first target).
	Target string `json:"target,omitempty"`
}

// The arguments Stagehand gives an AnalysisTemplate that declares them.
const (
	ArgEnvironment = "stagehand-environment"
	ArgRevision    = "stagehand-revision"
	ArgVersions    = "stagehand-versions"
)

// Argo Rollouts' analysis resources.
var (
	AnalysisRunGVR             = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "analysisruns"}
	AnalysisTemplateGVR        = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "analysistemplates"}
	ClusterAnalysisTemplateGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "clusteranalysistemplates"}
)

// parseAnalysis checks an analysis task's settings.
func parseAnalysis(a *Analysis, bad badFunc) *Analysis {
	if a.Template == "" {
		bad("analysis.template", "required: the name of an AnalysisTemplate")
	} else if errs := validation.IsDNS1123Subdomain(a.Template); len(errs) > 0 {
		bad("analysis.template", "want the name of an AnalysisTemplate, got %q (%s)", a.Template, errs[0])
	}
	for _, k := range slices.Sorted(maps.Keys(a.Args)) {
		if strings.HasPrefix(k, "stagehand-") {
			bad("analysis.args."+k, "the stagehand- prefix is reserved for the arguments stagehand sets")
		}
	}
	return a
}

// analysis creates t's AnalysisRun from its template in its target, waits
// until the run completes (or the task times out) and deletes it.
func (v *Verifier) analysis(ctx context.Context, run Run, t Task) verdict {
	a := t.Analysis
	tg, err := targetOf(run, "analysis.target", a.Target)
	if err != nil {
		return verdict{Fail, err.Error()}
	}
	if tg.Dynamic == nil {
		return verdict{Fail, fmt.Sprintf("target %s reads no Argo Rollouts resources: set rollouts on the environment", tg.Name)}
	}
	kind, gvr, tmpls := "AnalysisTemplate", AnalysisTemplateGVR, tg.Dynamic.Resource(AnalysisTemplateGVR).Namespace(tg.Namespace)
	if a.Cluster {
		kind, gvr = "ClusterAnalysisTemplate", ClusterAnalysisTemplateGVR
		tmpls = nil
	}
	var tmpl *unstructured.Unstructured
	if tmpls != nil {
		tmpl, err = tmpls.Get(ctx, a.Template, metav1.GetOptions{})
	} else {
		tmpl, err = tg.Dynamic.Resource(gvr).Get(ctx, a.Template, metav1.GetOptions{})
	}
	if err != nil {
		return verdict{Fail, fmt.Sprintf("reading %s %s: %v", kind, a.Template, err)}
	}
	ar, err := analysisRun(run, t, tmpl)
	if err != nil {
		return verdict{Fail, err.Error()}
	}
	runs := tg.Dynamic.Resource(AnalysisRunGVR).Namespace(tg.Namespace)
	created, err := runs.Create(ctx, ar, metav1.CreateOptions{})
	if err != nil {
		return verdict{Fail, fmt.Sprintf("creating AnalysisRun in %s/%s: %v", tg.Name, tg.Namespace, err)}
	}
	defer func() {
		// Deleted even when the task timed out or the run was cancelled.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = runs.Delete(dctx, created.GetName(), metav1.DeleteOptions{})
	}()
	where := fmt.Sprintf("AnalysisRun %s/%s of %s %s in target %s", tg.Namespace, created.GetName(), kind, a.Template, tg.Name)
	tick := time.NewTicker(v.jobPoll)
	defer tick.Stop()
	for {
		cur, err := runs.Get(ctx, created.GetName(), metav1.GetOptions{})
		if err == nil {
			phase, _, _ := unstructured.NestedString(cur.Object, "status", "phase")
			switch phase {
			case "Successful":
				return verdict{Pass, where + " succeeded" + analysisDetail(cur)}
			case "Inconclusive":
				return verdict{Warning, where + " was inconclusive" + analysisDetail(cur)}
			case "Failed", "Error":
				return verdict{Fail, fmt.Sprintf("%s ended %s%s", where, strings.ToLower(phase), analysisDetail(cur))}
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s did not finish: %v", where, context.Cause(ctx))
			if err != nil {
				msg += fmt.Sprintf(" (last read: %v)", err)
			}
			return verdict{Fail, msg}
		case <-tick.C:
		}
	}
}

// analysisRun builds the AnalysisRun of template tmpl for t, as Argo
// Rollouts' controller builds one for a Rollout's analysis step: the
// template's metrics, dry-run and retention settings, and its arguments
// with their values.
func analysisRun(run Run, t Task, tmpl *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	spec, _, _ := unstructured.NestedMap(tmpl.Object, "spec")
	metrics, ok := spec["metrics"]
	if !ok {
		return nil, fmt.Errorf("%s %s has no metrics", tmpl.GetKind(), tmpl.GetName())
	}
	versions, err := versionsJSON(run)
	if err != nil {
		return nil, err
	}
	given := map[string]string{ArgEnvironment: run.Environment, ArgRevision: run.Revision, ArgVersions: versions}
	maps.Copy(given, t.Analysis.Args)
	declared, _, _ := unstructured.NestedSlice(spec, "args")
	args := make([]any, 0, len(declared))
	seen := map[string]bool{}
	for _, d := range declared {
		arg, ok := d.(map[string]any)
		if !ok {
			continue
		}
		name, _ := arg["name"].(string)
		seen[name] = true
		if v, ok := given[name]; ok {
			arg = map[string]any{"name": name, "value": v}
		}
		args = append(args, arg)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Analysis.Args)) {
		if !seen[k] {
			return nil, fmt.Errorf("analysis.args.%s: %s %s declares no argument %q", k, tmpl.GetKind(), tmpl.GetName(), k)
		}
	}
	arSpec := map[string]any{"metrics": metrics, "args": args}
	for _, k := range []string{"dryRun", "measurementRetention"} {
		if v, ok := spec[k]; ok {
			arSpec[k] = v
		}
	}
	ar := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": AnalysisRunGVR.GroupVersion().String(),
		"kind":       "AnalysisRun",
		"metadata": map[string]any{
			"name": jobName(t.Name, run.Revision),
			"labels": map[string]any{
				LabelManagedBy: "stagehand", LabelTask: labelValue(t.Name), LabelEnvironment: labelValue(run.Environment),
				LabelRevision: labelValue(run.Revision),
			},
		},
		"spec": arSpec,
	}}
	return ar, nil
}

// analysisDetail is the run's message and each metric's phase and message.
func analysisDetail(ar *unstructured.Unstructured) string {
	var parts []string
	if msg, _, _ := unstructured.NestedString(ar.Object, "status", "message"); msg != "" {
		parts = append(parts, msg)
	}
	results, _, _ := unstructured.NestedSlice(ar.Object, "status", "metricResults")
	for _, r := range results {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		s := fmt.Sprintf("metric %v %v", m["name"], m["phase"])
		if msg, _ := m["message"].(string); msg != "" {
			s += ": " + msg
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// versionsJSON is run's versions as a JSON object.
func versionsJSON(run Run) (string, error) {
	versions := run.Versions
	if versions == nil {
		versions = map[string]string{}
	}
	b, err := json.Marshal(versions)
	if err != nil {
		return "", fmt.Errorf("encoding versions: %w", err)
	}
	return string(b), nil
}
