package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
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
		{"no parts built", nil, "WithStore is required"},
		{"no reconciler", nil, "WithReconciler is required"},
		{"no source", nil, "WithSource is required"},
		{"no lock service", nil, "WithLockService is required"},
		{"no targets of an environment", []Option{WithTargets(map[string][]reconcile.Target{"devel": nil})}, "environments.prod: no targets given"},
		{"nil pushes", []Option{WithPushes(nil)}, "pushes: nil"},
		{"lease shorter than renew", []Option{WithLeaderElection(LeaderElection{Enable: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second})},
			"leaseDuration > renewDeadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Environments: map[string]config.Environment{"devel": {}, "prod": {}}}
			_, err := New(cfg, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "configuring daemon: ") {
				t.Errorf("New = %v, want an error about %q", err, tc.want)
			}
		})
	}
}
