package lease

import (
	"strings"
	"testing"
)

func TestEnvName(t *testing.T) {
	long := "a-very-long-environment-name-that-goes-on-and-on-and-on"
	for _, tc := range []struct{ env, want string }{
		{"prod", "stagehand-env-prod"},
		{"Prod_EU", "stagehand-env-prod-eu-"},
		{long, "stagehand-env-a-very-long-environment-name-t-"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			got := EnvName(tc.env)
			if !strings.HasPrefix(got, tc.want) || len(got) > 63 || (tc.env != "prod" && len(got) != len(tc.want)+8) {
				t.Errorf("EnvName(%q) = %q, want %q and a hash of 8 hex digits (at most 63 characters)", tc.env, got, tc.want)
			}
		})
	}
	if EnvName("Prod_EU") == EnvName("prod-eu") {
		t.Error("distinct environments share a Lease")
	}
}

// TestMemberLeaseName: a replica's member Lease is named after a hash of its
// identity (any characters), the same for the same identity.
func TestMemberLeaseName(t *testing.T) {
	a, b := memberLeaseName("system:serviceaccount:stagehand:reconciler/pod-1"), memberLeaseName("pod-2")
	if !strings.HasPrefix(a, memberLeasePrefix) || len(a) != len(memberLeasePrefix)+16 || a == b || a != memberLeaseName("system:serviceaccount:stagehand:reconciler/pod-1") {
		t.Errorf("member leases %q and %q", a, b)
	}
}
