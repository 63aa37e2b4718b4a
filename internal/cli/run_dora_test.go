package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestRunDORAAndPipeline: `reconciler run` counts staging's deploy in the
// DORA metrics with its lead time dated by git, `reconciler dora` reports it
// over the API, and `reconciler status` lists the environments in
// pipeline.yaml's stage order (staging before prod, not by name) with what
// the promotion from staging to prod waits for.
func TestRunDORAAndPipeline(t *testing.T) {
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/staging/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
		"environments/prod/manifest.json":    `{"services": [{"name": "web", "containers": [{"dockerTag": "1.0.0"}]}]}`,
		"pipeline.yaml": "stages:\n  - name: staging\n    lockPath: apps/staging\n  - name: prod\n    promoteFrom: staging\n    lockPath: apps/prod\n" +
			"    requires: {healthy: true, soak: 2h}\n",
	}, "staging and prod")
	staging, prod := env.Namespace(t), env.Namespace(t)
	env.CreateDeployment(t, staging, "web", "example.com/web:1.0.0")
	env.CreateDeployment(t, prod, "web", "example.com/web:1.0.0")
	dir := t.TempDir()
	addr := testenv.FreeAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("run-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`source: {url: %q, branch: main, cacheDir: %q}
environments:
  staging: {lockPath: apps/staging, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
  prod: {lockPath: apps/prod, targets: [{name: a, kubeconfig: %q, namespace: %s}]}
registry: {verifyDigests: false, pinDigests: false}
server: {listen: %q, apiTokenFile: token}
locks: {namespace: %s}
state: {namespace: %s, kubeconfig: %q}
dora: {rollbackWindow: 12h}
`, url, filepath.Join(dir, "cache"), env.Kubeconfig, staging, env.Kubeconfig, prod, addr, staging, staging, env.Kubeconfig)
	cfgPath := filepath.Join(dir, "reconciler.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"run", "--config", cfgPath, "--log-level", "error", "--identity", "test-replica"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("run did not return within 30s of its context ending")
		}
	})

	// This package's control plane runs no controllers: the test plays the
	// Deployment controller for staging's web once it is patched.
	go rollOut(ctx, t, env, staging, "web", "example.com/web:2.0.0")

	// The deploy is counted once it is recorded: the metrics say so.
	counted := []string{`stagehand_deployments_total{environment="staging",result="succeeded"} 1`,
		`stagehand_lead_time_seconds_count{environment="staging"} 1`, `stagehand_deployments_total{environment="prod",result="failed"} 0`}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		var body string
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
		missing := ""
		for _, c := range counted {
			if !strings.Contains(body, c) {
				missing = c
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/environments/staging", nil)
			req.Header.Set("Authorization", "Bearer run-token")
			var env string
			if resp, err := http.DefaultClient.Do(req); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				env = string(b)
			}
			t.Fatalf("/metrics never showed %s; staging is:\n%s", missing, env)
		}
		time.Sleep(200 * time.Millisecond)
	}

	tokenFile := filepath.Join(dir, "token")
	server := "http://" + addr
	stdout, stderr, code := runDecision(t, false, "", "dora", "--server", server, "--token-file", tokenFile, "--env", "staging", "-o", "json")
	var r dora.Report
	if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil {
		t.Fatalf("dora -o json: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if r.Environment != "staging" || r.Window != "30d" || r.Deploys != 1 || r.Succeeded != 1 || r.LeadTime.Count != 1 || !r.Complete {
		t.Errorf("dora -o json = %+v; want staging's one deploy, dated by git, over 30d", r)
	}
	stdout, _, code = runDecision(t, false, "", "dora", "--server", server, "--token-file", tokenFile, "--env", "staging", "--window", "2w")
	if code != 0 || !strings.Contains(stdout, "staging, last 14d") || !strings.Contains(stdout, "change failure rate    0% (0 of 1)") {
		t.Errorf("dora --window 2w: exit %d\n%s", code, stdout)
	}
	_, stderr, code = runDecision(t, false, "", "dora", "--server", server, "--token-file", tokenFile, "--env", "staging", "--window", "400d")
	if code != 2 || !strings.Contains(stderr, `invalid window "400d": longer than the longest window, 366d`) {
		t.Errorf("dora --window 400d: exit %d, %s; want exit 2 naming the window", code, stderr)
	}

	// reconciler status: stage order, and what the promotion waits for.
	var lines []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		stdout, _, code = runDecision(t, false, "", "status", "--server", server, "--token-file", tokenFile)
		lines = strings.Split(strings.TrimSpace(stdout), "\n")
		if code == 0 && strings.Contains(stdout, "staging → prod: web soaking: healthy in staging for") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never said what the promotion waits for: exit %d\n%s", code, stdout)
		}
	}
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "SERVICE STAGING PROD" {
		t.Errorf("status's columns %q, want SERVICE STAGING PROD (pipeline.yaml's order)", got)
	}
}

// rollOut writes Deployment ns/name's status as its controller would once
// its pods run image, until ctx ends: observed, updated, ready and available.
func rollOut(ctx context.Context, t *testing.T, env *testenv.Env, ns, name, image string) {
	deps := env.Clientset.AppsV1().Deployments(ns)
	for ctx.Err() == nil {
		d, err := deps.Get(ctx, name, metav1.GetOptions{})
		if err == nil && d.Spec.Template.Spec.Containers[0].Image == image && d.Status.ObservedGeneration != d.Generation {
			n := int32(1)
			if d.Spec.Replicas != nil {
				n = *d.Spec.Replicas
			}
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
			if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Logf("writing %s/%s's status: %v", ns, name, err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
