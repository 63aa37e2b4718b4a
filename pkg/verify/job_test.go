package verify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

const revision = "0123456789abcdef0123456789abcdef01234567"

// custom is kwok's annotation (as testenv starts it) that leaves a pod's
// status to the test: the pod stays Pending until the test writes it.
const custom = `"annotations": {"kwok.x-k8s.io/status": "custom"}`

// TestJob runs Jobs on the real API server, where kwok completes Job pods
// (its default pod-complete stage) unless a pod asks for a custom status,
// which the test then writes: exit 3, or nothing at all (a timeout).
func TestJob(t *testing.T) {
	env := cluster.Env(t)
	for _, tc := range []struct {
		name, props string
		exit        int32 // written to the custom pod; 0: none
		result      string
		message     []string
	}{
		{"succeeds", `{"job": {"image": "acme/smoke:1", "args": ["--all"]}}`, 0, verify.Pass, []string{"succeeded"}},
		{"fails", `{"job": {"image": "acme/smoke:1", "env": {"SUITE": "checkout"}, ` + custom + `}}`, 3, verify.Fail,
			[]string{"failed: BackoffLimitExceeded", "container verify exited 3 (Error: 2 of 9 checks failed)"}},
		{"times out", `{"timeout": "3s", "job": {"image": "acme/smoke:1", ` + custom + `}}`, 0, verify.Fail,
			[]string{"did not finish", "timed out after 3s"}},
		{"unknown target", `{"job": {"image": "acme/smoke:1", "target": "us"}}`, 0, verify.Fail,
			[]string{`job.target "us" is not a target of environment devel; targets: eu`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			task := mustTask(t, "smoke", tc.props)
			run := verify.Run{Environment: "devel", Revision: revision, Versions: map[string]string{"web": "1.2.0"},
				Targets: []verify.Target{{Name: "eu", Namespace: ns, Client: env.Clientset}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pod := make(chan *corev1.Pod, 1)
			if tc.exit != 0 {
				go failPod(ctx, t, env.Clientset, ns, tc.exit, pod)
			}
			rep, err := newVerifier(t).Verify(ctx, run, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.result {
				t.Fatalf("report %+v, want %s", rep, tc.result)
			}
			for _, m := range tc.message {
				if !strings.Contains(rep.Tasks[0].Message, m) {
					t.Errorf("message %q does not say %q", rep.Tasks[0].Message, m)
				}
			}
			if tc.exit != 0 {
				checkPodEnv(t, <-pod)
			}
			// The Job is cleaned up once judged.
			jobs, err := env.Clientset.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{LabelSelector: verify.LabelTask + "=smoke"})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs.Items {
				if j.DeletionTimestamp == nil {
					t.Errorf("Job %s left behind", j.Name)
				}
			}
		})
	}
}

// failPod waits for the Job's pod, writes it as failed with exit code
// exit, and hands it over.
func failPod(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string, exit int32, out chan<- *corev1.Pod) {
	var p *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: verify.LabelManagedBy + "=stagehand"})
		if err != nil || len(pods.Items) == 0 || pods.Items[0].Spec.NodeName == "" {
			return false, nil
		}
		p = &pods.Items[0]
		now := metav1.Now()
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "verify", Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Error",
				Message: "2 of 9 checks failed", StartedAt: now, FinishedAt: now}}}}
		_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Errorf("failing the Job's pod: %v", err)
	}
	out <- p
}

// checkPodEnv: the pod was told the environment, revision and versions,
// besides the task's own variables, and is labelled.
func checkPodEnv(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if p == nil {
		return
	}
	got := map[string]string{}
	for _, e := range p.Spec.Containers[0].Env {
		got[e.Name] = e.Value
	}
	var versions map[string]string
	if err := json.Unmarshal([]byte(got["STAGEHAND_VERSIONS"]), &versions); err != nil || versions["web"] != "1.2.0" {
		t.Errorf("STAGEHAND_VERSIONS = %q (%v)", got["STAGEHAND_VERSIONS"], err)
	}
	if got["STAGEHAND_ENVIRONMENT"] != "devel" || got["STAGEHAND_REVISION"] != revision || got["SUITE"] != "checkout" {
		t.Errorf("pod env %v", got)
	}
	if p.Labels[verify.LabelEnvironment] != "devel" || p.Labels[verify.LabelRevision] != revision {
		t.Errorf("pod labels %v", p.Labels)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restart policy %s", p.Spec.RestartPolicy)
	}
}
