package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// planWorld is a namespace with a CronJob "report" and a Deployment "web"
// (no controller runs in this package's control plane, so the Deployment's
// rollout never finishes), a manifests checkout and a config pointing at them.
type planWorld struct {
	ns, lockNS, dir, config string
}

func newPlanWorld(t *testing.T) *planWorld {
	t.Helper()
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	lockNS := env.Namespace(t)
	lbl := map[string]string{"app.kubernetes.io/name": "report"}
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: ns, Labels: lbl},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "report", Image: "reg.example.com/team/report:1"}}}},
		}}},
	}
	if _, err := env.Clientset.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	sel := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "reg.example.com/team/web:1"}}}}},
	}
	if _, err := env.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &planWorld{ns: ns, lockNS: lockNS, dir: t.TempDir()}
	w.writeManifest(t, "2", "2")
	w.config = filepath.Join(t.TempDir(), "reconciler.yaml")
	cfg := `
environments:
  prod:
    lockPath: apps/prod
    targets:
      - {name: a, kubeconfig: ` + env.Kubeconfig + `, namespace: ` + ns + `}
registry: {verifyDigests: false, pinDigests: false}
workloads: {rolloutTimeout: 2s}
locks: {storage: kubernetes, namespace: ` + lockNS + `}
state: {kubeconfig: ` + env.Kubeconfig + `}
`
	if err := os.WriteFile(w.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *planWorld) writeManifest(t *testing.T, reportTag, webTag string) {
	t.Helper()
	p := filepath.Join(w.dir, "environments", "prod", "manifest.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	m := `{"services": [
  {"name": "report", "containers": [{"dockerName": "team/report", "dockerTag": "` + reportTag + `"}]},
  {"name": "web", "containers": [{"dockerName": "team/web", "dockerTag": "` + webTag + `"}]}
]}`
	if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *planWorld) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	base := []string{args[0], "--config", w.config, "--env", "prod"}
	if w.dir != "" {
		base = append(base, "--dir", w.dir)
	}
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs(append(base, args[1:]...)) // later flags win
	err := cmd.ExecuteContext(context.Background())
	if err != nil && err.Error() != "" {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), command.Code(err)
}

func TestPlanAndApplyCommands(t *testing.T) {
	w := newPlanWorld(t)

	stdout, stderr, code := w.run(t, "plan", "-o", "json")
	if code != 0 {
		t.Fatalf("plan -o json: exit %d, stderr:\n%s", code, stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("plan output is not JSON: %v\n%s", err, stdout)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	wantKeys := []string{"blocked", "changes", "environment", "planHash", "problems", "revision", "skipConfirmation", "unchanged", "unmanaged"}
	if diff := cmp.Diff(wantKeys, sortedStrings(keys)); diff != "" {
		t.Errorf("plan JSON keys (-want +got):\n%s", diff)
	}
	var plan reconcile.Plan
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	wantChanges := []reconcile.Change{
		{Service: "report", Target: "a", Namespace: w.ns, Kind: "CronJob", Name: "report", Container: "report", From: "reg.example.com/team/report:1", To: "reg.example.com/team/report:2"},
		{Service: "web", Target: "a", Namespace: w.ns, Kind: "Deployment", Name: "web", Container: "web", From: "reg.example.com/team/web:1", To: "reg.example.com/team/web:2"},
	}
	if diff := cmp.Diff(wantChanges, plan.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if plan.Environment != "prod" || plan.Revision != "local" || plan.PlanHash != reconcile.Hash("prod", "local", wantChanges) {
		t.Errorf("environment %q revision %q planHash %q; want prod, local (not a git checkout), %s", plan.Environment, plan.Revision, plan.PlanHash, reconcile.Hash("prod", "local", wantChanges))
	}

	stdout, _, code = w.run(t, "plan")
	t.Logf("plan text:\n%s", stdout)
	for _, want := range []string{"Target a (namespace " + w.ns + "): 2 change(s)", "report", "CronJob/report", "reg.example.com/team/web:1", "→ reg.example.com/team/web:2", plan.PlanHash} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("plan text (exit %d) lacks %q:\n%s", code, want, stdout)
		}
	}

	// The manifest moves on after the review: the approved hash is stale.
	w.writeManifest(t, "3", "2")
	_, stderr, code = w.run(t, "apply", "--plan-hash", plan.PlanHash)
	if code != 3 || !strings.Contains(stderr, "no longer matches") {
		t.Errorf("apply with a stale hash: exit %d, stderr:\n%s\nwant exit 3", code, stderr)
	}
	if img := cronImage(t, w.ns); img != "reg.example.com/team/report:1" {
		t.Errorf("cronjob image %s after a refused apply; want it untouched", img)
	}

	// Apply the current plan: the CronJob succeeds, the Deployment's rollout
	// cannot finish without a controller and times out: exit 1.
	stdout, _, code = w.run(t, "plan", "-o", "json")
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil || code != 0 {
		t.Fatalf("plan: exit %d, %v", code, err)
	}
	stdout, stderr, code = w.run(t, "apply", "--plan-hash", plan.PlanHash)
	if code != 1 {
		t.Errorf("apply: exit %d, want 1 (web cannot roll out); stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"a/" + w.ns + " CronJob/report: patched", "a/" + w.ns + " CronJob/report: succeeded",
		"a/" + w.ns + " Deployment/web: rolling out (waiting for the controller to observe generation 2",
		"a/" + w.ns + " Deployment/web: failed (rollout not finished after 2s",
		"2 workload(s): 1 succeeded, 1 failed, 0 blocked",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, stdout)
		}
	}
	if img := cronImage(t, w.ns); img != "reg.example.com/team/report:3" {
		t.Errorf("cronjob image = %s, want reg.example.com/team/report:3", img)
	}

	// Everything is applied now: plan is empty and apply --yes does nothing, exit 0.
	stdout, _, code = w.run(t, "plan")
	if code != 0 || !strings.Contains(stdout, "No changes.") {
		t.Errorf("plan after apply (exit %d):\n%s\nwant No changes.", code, stdout)
	}
	stdout, stderr, code = w.run(t, "apply", "--yes")
	if code != 0 || !strings.Contains(stdout, "nothing to apply") {
		t.Errorf("apply --yes with nothing to do: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestPlanFromGitSource reads the manifests from the configured branch on a
// real git server when --dir is not given; the plan's revision is the commit.
func TestPlanFromGitSource(t *testing.T) {
	w := newPlanWorld(t)
	srv := gitserver.New(t)
	url := srv.Init(t, "manifests")
	manifestJSON, err := os.ReadFile(filepath.Join(w.dir, "environments", "prod", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	sha := srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/prod/manifest.json": string(manifestJSON)}, "deploy report 2")
	cfg, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append([]byte("source: {url: "+url+", branch: main, cacheDir: "+t.TempDir()+"}\n"), cfg...)
	if err := os.WriteFile(w.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	w.dir = ""
	stdout, stderr, code := w.run(t, "plan", "-o", "json")
	var plan reconcile.Plan
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil || code != 0 {
		t.Fatalf("plan: exit %d, %v\nstderr:\n%s", code, err, stderr)
	}
	if plan.Revision != sha || len(plan.Changes) != 2 {
		t.Errorf("plan from git: revision %s with %d changes; want %s with 2", plan.Revision, len(plan.Changes), sha)
	}
}

// TestPlanFromGitSourceWithGitHubAppOnEnterprise: with source.auth.githubApp,
// the installation token is minted at github.apiURL (GitHub Enterprise, here
// the test server), not at api.github.com; the git server accepts nothing else.
func TestPlanFromGitSourceWithGitHubAppOnEnterprise(t *testing.T) {
	w := newPlanWorld(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	srv := gitserver.New(t, gitserver.WithCredentialCheck(func(user, secret string) bool {
		return user == "x-access-token" && gh.ValidToken(secret)
	}))
	url := srv.Init(t, "manifests")
	manifestJSON, err := os.ReadFile(filepath.Join(w.dir, "environments", "prod", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	sha := srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/prod/manifest.json": string(manifestJSON)}, "deploy report 2")
	cfg, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	pem := gitserver.WriteFile(t, t.TempDir(), "app.pem", string(gh.App().PrivateKeyPEM()))
	cfg = append(fmt.Appendf(nil, `source:
  url: %s
  branch: main
  cacheDir: %s
  auth: {githubApp: {appID: %d, installationID: %d, privateKeyFile: %s}}
github: {apiURL: %q, owner: acme, repo: manifests}
`, url, t.TempDir(), gh.App().ID(), gh.App().InstallationID(), pem, gh.URL()), cfg...)
	if err := os.WriteFile(w.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	w.dir = ""
	stdout, stderr, code := w.run(t, "plan", "-o", "json")
	var plan reconcile.Plan
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil || code != 0 {
		t.Fatalf("plan: exit %d, %v\nstderr:\n%s", code, err, stderr)
	}
	if plan.Revision != sha {
		t.Errorf("plan revision %s, want %s", plan.Revision, sha)
	}
	if gh.App().TokensIssued() == 0 {
		t.Error("no installation token was minted at github.apiURL")
	}
}

func TestPlanInvalidManifest(t *testing.T) {
	w := newPlanWorld(t)
	p := filepath.Join(w.dir, "environments", "prod", "manifest.json")
	if err := os.WriteFile(p, []byte(`{"services": [{"name": "web", "containers": [{"dockertag": "2"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := w.run(t, "plan")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "environments/prod/manifest.json") || !strings.Contains(stderr, "dockerTag") {
		t.Errorf("plan of an invalid manifest: exit %d, stdout %q, stderr:\n%s\nwant exit 1 naming the file and the key", code, stdout, stderr)
	}
}

func TestPlanUsage(t *testing.T) {
	w := newPlanWorld(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"apply needs a hash or --yes", []string{"apply"}, "exactly one of --plan-hash H and --yes"},
		{"not both", []string{"apply", "--yes", "--plan-hash", "sha256:00"}, "exactly one of --plan-hash H and --yes"},
		{"bad output", []string{"plan", "-o", "yaml"}, `invalid --output "yaml"`},
		{"unknown environment", []string{"plan", "--env", "nope"}, `unknown environment "nope"; configured: prod`},
		{"unknown flag", []string{"plan", "--bogus"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := w.run(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

func cronImage(t *testing.T, ns string) string {
	t.Helper()
	env := cluster.Env(t)
	cj, err := env.Clientset.BatchV1().CronJobs(ns).Get(context.Background(), "report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestApplyProblemExitsOne: a service kept back by a problem (here: no
// workload) is not deployed, so apply must not report success even though the
// rest of the plan was applied.
func TestApplyProblemExitsOne(t *testing.T) {
	w := newPlanWorld(t)
	p := filepath.Join(w.dir, "environments", "prod", "manifest.json")
	m := `{"services": [
  {"name": "report", "containers": [{"dockerName": "team/report", "dockerTag": "3"}]},
  {"name": "ghost", "containers": [{"dockerTag": "1"}]}
]}`
	if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := w.run(t, "apply", "--yes")
	if code != 1 || !strings.Contains(stdout, "ghost") || !strings.Contains(stdout, "1 problem(s)") {
		t.Errorf("apply with a problem: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 naming the service", code, stdout, stderr)
	}
	if got := cronImage(t, w.ns); got != "reg.example.com/team/report:3" {
		t.Errorf("report image = %s, want the rest of the plan applied", got)
	}
}
