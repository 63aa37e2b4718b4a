package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// TestNewRefusesOptions: options are judged before anything is built (no cluster needed).
func TestNewRefusesOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"negative apply grace", []Option{WithApplyGrace(-time.Second)}, "apply grace: must not be negative"},
		{"nil gate", []Option{WithGate(nil)}, "nil gate"},
		{"zero repropose", []Option{WithRepropose(0)}, "repropose: must be positive"},
		{"lease shorter than renew", []Option{WithLeaderElection(LeaderElection{Enable: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second})},
			"leaseDuration > renewDeadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(&config.Config{}, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "configuring daemon: ") {
				t.Errorf("New = %v, want an error about %q", err, tc.want)
			}
		})
	}
}
