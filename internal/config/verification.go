package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// Verification configures the http and prometheus tasks of pipeline.yaml's
// sequences (pkg/verify).
type Verification struct {
	// AllowAddresses opens address ranges (CIDR, or one address) that
	// verification requests are refused by default: loopback, unspecified,
	// link-local and the cloud metadata addresses.
	AllowAddresses []string `json:"allowAddresses,omitempty"`
}

// AllowedPrefixes parses AllowAddresses: a CIDR range (its host bits
// cleared) or one address (a /32 or /128); zones are refused.
func (v Verification) AllowedPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(v.AllowAddresses))
	for i, s := range v.AllowAddresses {
		p, err := parseRange(s)
		if err != nil {
			return nil, fmt.Errorf("verification.allowAddresses[%d] %q: %w", i, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseRange(s string) (netip.Prefix, error) {
	bad := fmt.Errorf("want an address or a CIDR range such as 127.0.0.1/32 or fd00::/8")
	if strings.Contains(s, "%") {
		return netip.Prefix{}, bad
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, bad
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, bad
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (v Verification) validate(bad func(field, format string, a ...any)) {
	for i, s := range v.AllowAddresses {
		if _, err := parseRange(s); err != nil {
			bad(fmt.Sprintf("verification.allowAddresses[%d]", i), "%q: %v", s, err)
		}
	}
}
