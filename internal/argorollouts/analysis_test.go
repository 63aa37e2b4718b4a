package argorollouts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestAnalysisTask: an analysis verification task runs an AnalysisTemplate
// as an AnalysisRun on the real controller and judges by its phase: the web
// metric answering ok passes, answering not ok fails with the metric's
// word; the AnalysisRun is deleted afterwards.
func TestAnalysisTask(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	dyn := dynamicClient(t, env)
	pass, fail := newAnalysisServer(t, true), newAnalysisServer(t, false)
	createTemplate(t, dyn, ns, "passes", pass.URL)
	createTemplate(t, dyn, ns, "fails", fail.URL)
	v, err := verify.New(verify.WithJobPoll(200 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	run := verify.Run{Environment: "test", Revision: "rev2", Versions: map[string]string{"api": "2"},
		Targets: []verify.Target{{Name: "a", Namespace: ns, Client: env.Clientset, Dynamic: dyn}}}
	for _, tc := range []struct {
		template, result, says string
		server                 *analysisServer
	}{
		{"passes", verify.Pass, "succeeded", pass},
		{"fails", verify.Fail, "ended failed", fail},
	} {
		t.Run(tc.template, func(t *testing.T) {
			task, err := verify.ParseTask("check "+tc.template, []byte(`{"timeout": "2m", "analysis": {"template": "`+tc.template+`", "args": {"service": "api"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := v.Verify(context.Background(), run, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Tasks[0]
			if got.Result != tc.result || !strings.Contains(got.Message, tc.says) || !strings.Contains(got.Message, "metric ok") {
				t.Errorf("task %s: %s %q; want %s saying %q and naming metric ok", tc.template, got.Result, got.Message, tc.result, tc.says)
			}
			if tc.server.asked.Load() == 0 {
				t.Error("the AnalysisRun never asked the test's server")
			}
			l, err := dyn.Resource(verify.AnalysisRunGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ar := range l.Items {
				if ar.GetDeletionTimestamp() == nil {
					t.Errorf("AnalysisRun %s left after the task", ar.GetName())
				}
			}
		})
	}
}
