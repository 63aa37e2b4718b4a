package verify

import (
	"errors"
	"net/netip"
	"testing"
)

// TestAddressPolicy: what the dialer refuses by default, and that an
// allowed range opens exactly what it covers (metadata addresses included,
// when named).
func TestAddressPolicy(t *testing.T) {
	allow := addressPolicy{allow: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("100.100.100.200/32"), netip.MustParsePrefix("fd20:ce::/64"),
	}}
	for _, tt := range []struct {
		addr    string
		want    error // by default; nil: reached
		allowed bool  // reached with allow
	}{
		{"127.0.0.1", ErrLoopback, true},
		{"127.0.0.2", ErrLoopback, false},
		{"::1", ErrLoopback, true},
		{"::ffff:127.0.0.1", ErrLoopback, true},
		{"0.0.0.0", ErrUnspecified, false},
		{"0.1.2.3", ErrUnspecified, false},
		{"::", ErrUnspecified, false},
		{"169.254.169.254", ErrLinkLocal, false},
		{"169.254.170.2", ErrLinkLocal, false},
		{"fe80::1", ErrLinkLocal, false},
		{"fe80::1%eth0", ErrLinkLocal, false},
		{"fd00:ec2::254", ErrMetadata, false},
		{"fd20:ce::254", ErrMetadata, true},
		{"100.100.100.200", ErrMetadata, true},
		{"::ffff:100.100.100.200", ErrMetadata, true},
		{"168.63.129.16", ErrMetadata, false},
		{"192.0.0.192", ErrMetadata, false},
		{"64:ff9b::a9fe:a9fe", ErrLinkLocal, false},
		{"64:ff9b::6464:64c8", ErrMetadata, true},
		{"64:ff9b::7f00:1", ErrLoopback, true},
		{"64:ff9b:1::a9fe:a9fe", ErrLinkLocal, false},
		{"::a9fe:a9fe", ErrLinkLocal, false},
		{"::7f00:1", ErrLoopback, true},
		{"64:ff9b::a00:1", nil, true},
		{"100.100.100.201", nil, true},
		{"10.0.0.1", nil, true},
		{"2001:db8::1", nil, true},
	} {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			err := addressPolicy{}.refused(ip)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) || (err != nil && !errors.Is(err, ErrAddressRefused)) {
				t.Errorf("refused(%s) = %v, want %v (and ErrAddressRefused)", tt.addr, err, tt.want)
			}
			if err := allow.refused(ip); (err == nil) != tt.allowed {
				t.Errorf("with the allow-list, refused(%s) = %v, want reached %v", tt.addr, err, tt.allowed)
			}
		})
	}
}
