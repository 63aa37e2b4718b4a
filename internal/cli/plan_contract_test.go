package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestPlanJSONEntries checks the key names of every kind of plan entry in
// `plan -o json` (the contract scripts read), and that `apply -o json`
// keeps stdout one JSON document while progress goes to stderr.
func TestPlanJSONEntries(t *testing.T) {
	env := cluster.Env(t)
	w := newPlanWorld(t)
	ctx := context.Background()
	// An unmanaged workload, a service without workload (a problem) and an
	// incident lock on report (blocked).
	zero := int32(0)
	sel := map[string]string{"app": "legacy"}
	legacy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: w.ns, Labels: map[string]string{"app.kubernetes.io/name": "retired"}},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "legacy", Image: "legacy:1"}}}}},
	}
	if _, err := env.Clientset.AppsV1().Deployments(w.ns).Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := `{"services": [
  {"name": "report", "containers": [{"dockerName": "team/report", "dockerTag": "2"}]},
  {"name": "web", "containers": [{"dockerName": "team/web", "dockerTag": "2"}]},
  {"name": "ghost", "containers": [{"dockerTag": "1"}]}
]}`
	if err := os.WriteFile(filepath.Join(w.dir, "environments", "prod", "manifest.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := lock.NewKubernetesForConfig(env.Config, w.lockNS)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := lock.New(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Lock(ctx, lock.Lock{Path: "apps/prod/a/report", Type: lock.Incident, Author: "oncall", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := w.run(t, "plan", "-o", "json")
	if code != 0 {
		t.Fatalf("plan -o json: exit %d\n%s", code, stderr)
	}
	var plan map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("plan output is not JSON: %v\n%s", err, stdout)
	}
	change := []string{"container", "from", "kind", "name", "namespace", "service", "target", "to"}
	wantKeys := map[string][]string{
		"changes":   change,
		"blocked":   append(slices.Clone(change), "locks"),
		"problems":  {"message", "service", "target"},
		"unmanaged": {"kind", "name", "namespace", "service", "target"},
	}
	for list, want := range wantKeys {
		var entries []map[string]json.RawMessage
		if err := json.Unmarshal(plan[list], &entries); err != nil || len(entries) != 1 {
			t.Errorf("%s: %v, %d entries; want one:\n%s", list, err, len(entries), plan[list])
			continue
		}
		var got []string
		for k := range entries[0] {
			got = append(got, k)
		}
		if diff := cmp.Diff(sortedStrings(want), sortedStrings(got)); diff != "" {
			t.Errorf("keys of a %s entry (-want +got):\n%s", list, diff)
		}
	}
	var unchanged int
	if err := json.Unmarshal(plan["unchanged"], &unchanged); err != nil || unchanged != 0 {
		t.Errorf("unchanged = %s, want the number 0", plan["unchanged"])
	}
	if !strings.Contains(string(plan["blocked"]), "incident") || !strings.Contains(string(plan["problems"]), `"service": "ghost"`) {
		t.Errorf("blocked %s problems %s; want report blocked by the incident and a problem for ghost", plan["blocked"], plan["problems"])
	}

	// web cannot roll out (no controller here): exit 1, the result on stdout.
	stdout, stderr, code = w.run(t, "apply", "--yes", "-o", "json")
	if code != 1 {
		t.Errorf("apply --yes -o json: exit %d, want 1 (web cannot roll out)\nstderr:\n%s", code, stderr)
	}
	var res struct {
		Plan      map[string]json.RawMessage   `json:"plan"`
		Workloads []map[string]json.RawMessage `json:"workloads"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("apply stdout is not one JSON document (%v):\n%s", err, stdout)
	}
	if len(res.Workloads) != 1 || string(res.Workloads[0]["name"]) != `"web"` || string(res.Workloads[0]["outcome"]) != `"failed"` {
		t.Errorf("workloads %v; want web failed (report is blocked)", res.Workloads)
	}
	if !strings.Contains(stderr, "Deployment/web: patched") || strings.Contains(stdout, "patched (") {
		t.Errorf("progress belongs on stderr with -o json; stderr:\n%s\nstdout:\n%s", stderr, stdout)
	}
}
