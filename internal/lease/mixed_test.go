package lease

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLeaseLive: a Lease is live while it has a holder and its
// resourceVersion changed within its own lease duration (the default when
// it names none), as this replica observed it; the holder's clock, in its
// renew time, does not count.
func TestLeaseLive(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	holder, empty := "replica-b", ""
	secs := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name     string
		holder   *string
		duration *int32
		seenAgo  time.Duration
		want     bool
	}{
		{"no holder", nil, secs(10), 0, false},
		{"released (empty holder)", &empty, secs(10), 0, false},
		{"changed just now", &holder, secs(10), 0, true},
		{"changed within its duration", &holder, secs(10), 9 * time.Second, true},
		{"unchanged for its duration", &holder, secs(10), 10 * time.Second, false},
		{"its own duration, longer than the default", &holder, secs(60), 30 * time.Second, true},
		{"no duration: the default", &holder, nil, 14 * time.Second, true},
		{"no duration: past the default", &holder, nil, 16 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A renew time an hour ahead (the holder's fast clock) changes nothing.
			renew := metav1.NewMicroTime(now.Add(time.Hour))
			l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: tc.holder, LeaseDurationSeconds: tc.duration, RenewTime: &renew}}
			o := observed{rv: "1", at: now.Add(-tc.seenAgo)}
			if got := leaseLive(l, o, now, 15*time.Second); got != tc.want {
				t.Errorf("leaseLive = %v, want %v", got, tc.want)
			}
		})
	}
}
