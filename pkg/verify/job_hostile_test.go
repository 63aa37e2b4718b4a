package verify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestJobHostileFields: a Job template the API server cannot take fails its
// task at once, the message naming the field (within the 1 KiB a message
// keeps), and leaves no Job behind.
func TestJobHostileFields(t *testing.T) {
	env := cluster.Env(t)
	for _, tc := range []struct{ name, props, want string }{
		{"annotation key of another syntax", `{"job": {"image": "acme/smoke:1", "annotations": {"not a key!": "x"}}}`,
			`spec.template.annotations: Invalid value: "not a key!"`},
		{"env name with =", `{"job": {"image": "acme/smoke:1", "env": {"A=B": "x"}}}`, `spec.template.spec.containers[0].env[3].name: Invalid value: "A=B"`},
		{"service account of upper case", `{"job": {"image": "acme/smoke:1", "serviceAccountName": "Admin"}}`,
			`spec.template.spec.serviceAccountName: Invalid value: "Admin"`},
		{"a megabyte of annotation", `{"job": {"image": "acme/smoke:1", "annotations": {"x": "` + strings.Repeat("a", 300<<10) + `"}}}`,
			`spec.template.annotations: Too long: may not be more than 262144 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			task := mustTask(t, "smoke", tc.props)
			run := verify.Run{Environment: "devel", Revision: revision, Targets: []verify.Target{{Name: "eu", Namespace: ns, Client: env.Clientset}}}
			start := time.Now()
			rep, err := newVerifier(t).Verify(context.Background(), run, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			msg := rep.Tasks[0].Message
			if rep.Result != verify.Fail || !strings.Contains(msg, tc.want) || len(msg) > 1024+len("…") {
				t.Errorf("report %s, message (%d bytes) %q; want fail naming %q", rep.Result, len(msg), msg, tc.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s, want the API server's refusal at once", took)
			}
			jobs, err := env.Clientset.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(jobs.Items) != 0 {
				t.Errorf("Jobs left: %d (%v)", len(jobs.Items), err)
			}
		})
	}
}
