package verify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const templateYAML = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: error-rate, namespace: apps}
spec:
  dryRun: [{metricName: latency}]
  args:
  - name: service
  - name: threshold
    value: "0.05"
  - name: stagehand-revision
  - name: stagehand-versions
  metrics:
  - name: errors
    successCondition: result < {{args.threshold}}
    provider: {web: {url: "http://metrics/{{args.service}}"}}
`

// TestAnalysisRun: the AnalysisRun of a template carries its metrics and
// dry-run settings, the task's arguments and Stagehand's (only those the
// template declares), keeps a declared default, and refuses an argument
// the template does not declare.
func TestAnalysisRun(t *testing.T) {
	var tmpl unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(templateYAML), &tmpl.Object); err != nil {
		t.Fatal(err)
	}
	run := Run{Environment: "prod", Revision: "abc123", Versions: map[string]string{"api": "2"}}
	task := Task{Name: "error rate", Kind: KindAnalysis, Analysis: &Analysis{Template: "error-rate", Args: map[string]string{"service": "api"}}}
	ar, err := analysisRun(run, task, &tmpl)
	if err != nil {
		t.Fatal(err)
	}
	args, _, _ := unstructured.NestedSlice(ar.Object, "spec", "args")
	want := []any{
		map[string]any{"name": "service", "value": "api"},
		map[string]any{"name": "threshold", "value": "0.05"},
		map[string]any{"name": "stagehand-revision", "value": "abc123"},
		map[string]any{"name": "stagehand-versions", "value": `{"api":"2"}`},
	}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	metrics, _, _ := unstructured.NestedSlice(ar.Object, "spec", "metrics")
	dry, _, _ := unstructured.NestedSlice(ar.Object, "spec", "dryRun")
	if len(metrics) != 1 || len(dry) != 1 {
		t.Errorf("metrics %v, dryRun %v: want the template's", metrics, dry)
	}
	if ar.GetKind() != "AnalysisRun" || !strings.HasPrefix(ar.GetName(), "stagehand-verify-error-rate-abc123") || ar.GetLabels()[LabelRevision] != "abc123" {
		t.Errorf("AnalysisRun %s %s labels %v", ar.GetKind(), ar.GetName(), ar.GetLabels())
	}

	task.Analysis.Args["region"] = "eu"
	if _, err := analysisRun(run, task, &tmpl); err == nil || !strings.Contains(err.Error(), `analysis.args.region: AnalysisTemplate error-rate declares no argument "region"`) {
		t.Errorf("an undeclared argument: %v", err)
	}
}
