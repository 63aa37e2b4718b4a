package delivery

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestVerification: the Verifier runs test and evaluation where no Runner
// of their own was given, and checks only the properties of the tasks it
// runs. (Its runs on the real API server: the daemon's
// TestVerificationAfterRollout.)
func TestVerification(t *testing.T) {
	v, err := verify.New()
	if err != nil {
		t.Fatal(err)
	}
	own := func(context.Context, sequence.Request) (sequence.Result, error) {
		return sequence.Result{Result: promote.ResultPass}, nil
	}
	if got := (Verification{Own: map[string]sequence.Runner{"test": own}}).Runners("prod", nil); len(got) != 1 {
		t.Errorf("without a Verifier: %d runners; want the 1 given", len(got))
	}
	vf := Verification{Verifier: v, Own: map[string]sequence.Runner{"test": own}}
	got := vf.Runners("prod", nil)
	if len(got) != 2 || got["evaluation"] == nil {
		t.Fatalf("with a Verifier: runners %v; want test (given) and evaluation (the Verifier's)", got)
	}
	check := vf.Checker("prod", nil)
	bad := promote.Task{Name: "evaluation", Properties: json.RawMessage(`{"nonsense": true}`)}
	if err := check(bad); err == nil {
		t.Error("the check took an evaluation the Verifier cannot parse")
	}
	if err := check(promote.Task{Name: "test", Properties: bad.Properties}); err != nil {
		t.Errorf("the check of a task run by its own Runner: %v; want nothing checked", err)
	}
	if err := (Verification{}).Checker("prod", nil)(bad); err != nil {
		t.Errorf("the check without a Verifier: %v", err)
	}
}

// TestCheckerTargets: a task that cannot run in the environment's targets
// is refused as the sequence is read, naming the key: an analysis task
// where the environment does not set rollouts (its targets read no Argo
// Rollouts resources), and a job or analysis naming a target the
// environment does not have.
func TestCheckerTargets(t *testing.T) {
	v, err := verify.New()
	if err != nil {
		t.Fatal(err)
	}
	plain := []reconcile.Target{{Name: "eu", Namespace: "shop"}}
	argo := []reconcile.Target{{Name: "eu", Namespace: "shop"}, {Name: "us", Namespace: "shop", Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}}
	for _, tc := range []struct {
		name    string
		props   string
		targets []reconcile.Target
		wantErr string
	}{
		{"analysis without rollouts", `{"analysis": {"template": "error-rate"}}`, plain,
			"analysis: target eu of environment prod reads no Argo Rollouts resources: an analysis task needs environments.prod.rollouts set in the reconciler's configuration"},
		{"analysis in the target without rollouts", `{"analysis": {"template": "error-rate", "target": "eu"}}`, argo,
			"analysis: target eu of environment prod reads no Argo Rollouts resources"},
		{"analysis in the target with rollouts", `{"analysis": {"template": "error-rate", "target": "us"}}`, argo, ""},
		{"analysis in an unknown target", `{"analysis": {"template": "error-rate", "target": "ap"}}`, argo,
			`analysis.target "ap" is not a target of environment prod; targets: eu, us`},
		{"job in an unknown target", `{"job": {"image": "reg.example.com/smoke:1", "target": "ap"}}`, plain,
			`job.target "ap" is not a target of environment prod; targets: eu`},
		{"job in the first target", `{"job": {"image": "reg.example.com/smoke:1"}}`, plain, ""},
		{"http runs in no target", `{"http": {"url": "https://shop.example.com/health"}}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (Verification{Verifier: v}).Checker("prod", tc.targets)(promote.Task{Name: "test", Properties: json.RawMessage(tc.props)})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && got != "" || !strings.HasPrefix(got, tc.wantErr) {
				t.Errorf("check: %q; want %q", got, tc.wantErr)
			}
		})
	}
}
