package pass

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/meter"
)

// TestFailed: a step's failure says what went wrong, unwraps to it, and
// keeps its reason however it is wrapped; nil stays nil, and an error that
// is no step's failure has no reason. It starts nothing.
func TestFailed(t *testing.T) {
	boom := errors.New("boom")
	if err := Failed(StepApply, meter.ReasonApply, nil); err != nil {
		t.Errorf("Failed(nil) = %v, want nil", err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want meter.Reason
	}{
		{"a step's failure", Failed(StepPlan, meter.ReasonPlan, boom), meter.ReasonPlan},
		{"wrapped", fmt.Errorf("proposing: %w", Failed(StepGate, meter.ReasonState, boom)), meter.ReasonState},
		{"without a reason", Failed(StepRecord, "", boom), ""},
		{"no step's failure", boom, ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReasonOf(tc.err); got != tc.want {
				t.Errorf("ReasonOf = %q, want %q", got, tc.want)
			}
			if tc.err != nil && (!errors.Is(tc.err, boom) || tc.err.Error() == "") {
				t.Errorf("%v does not unwrap to %v", tc.err, boom)
			}
		})
	}
	if got := Failed(StepPlan, meter.ReasonPlan, boom).Error(); got != "boom" {
		t.Errorf("message = %q, want the error's own", got)
	}
}
