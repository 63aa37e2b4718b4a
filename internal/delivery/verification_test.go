package delivery

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
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
	bad := promote.Task{Name: "evaluation", Properties: json.RawMessage(`{"nonsense": true}`)}
	if err := vf.Check(bad); err == nil {
		t.Error("Check took an evaluation the Verifier cannot parse")
	}
	if err := vf.Check(promote.Task{Name: "test", Properties: bad.Properties}); err != nil {
		t.Errorf("Check of a task run by its own Runner: %v; want nothing checked", err)
	}
	if err := (Verification{}).Check(bad); err != nil {
		t.Errorf("Check without a Verifier: %v", err)
	}
}
