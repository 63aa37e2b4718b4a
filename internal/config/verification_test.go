package config

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVerification(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Verification
		err        string
	}{
		{name: "unset", yaml: "{}", want: Verification{}},
		{name: "ranges and addresses", yaml: `verification: {allowAddresses: [127.0.0.1/32, "::1", 10.96.0.0/12, fd20:ce::254]}`,
			want: Verification{AllowAddresses: []string{"127.0.0.1/32", "::1", "10.96.0.0/12", "fd20:ce::254"}}},
		{name: "not an address", yaml: `verification: {allowAddresses: [localhost]}`,
			err: `verification.allowAddresses[0]: "localhost": want an address or a CIDR range such as 127.0.0.1/32 or fd00::/8`},
		{name: "a bad prefix length", yaml: `verification: {allowAddresses: [127.0.0.1/33]}`, err: `verification.allowAddresses[0]: "127.0.0.1/33"`},
		{name: "a zone", yaml: `verification: {allowAddresses: [127.0.0.1/32, "fe80::1%eth0"]}`, err: `verification.allowAddresses[1]: "fe80::1%eth0"`},
		{name: "unknown key", yaml: `verification: {allowedAddresses: [127.0.0.1]}`, err: `unknown field "allowedAddresses"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Verification { return c.Verification })
		})
	}
	got, err := Verification{AllowAddresses: []string{"127.0.0.1", "::1", "10.1.2.3/8", "fd20:ce::254"}}.AllowedPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd20:ce::254/128")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("AllowedPrefixes (-want +got):\n%s", diff)
	}
}
