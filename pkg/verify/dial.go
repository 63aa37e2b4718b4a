package verify

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// ErrAddressRefused is wrapped by the error of every request an http or
// prometheus task sends to an address refused by default and not opened by
// WithAllowedAddresses; ErrLinkLocal, ErrLoopback, ErrUnspecified and
// ErrMetadata say which kind it was (errors.Is finds both).
var ErrAddressRefused = errors.New("address refused for verification")

// The kinds of refused addresses.
var (
	// ErrLinkLocal: 169.254.0.0/16 and fe80::/10, where most cloud metadata
	// services (169.254.169.254, ECS's 169.254.170.2) hand out the
	// credentials of the reconciler's node or pod.
	ErrLinkLocal error = refusedKind("link-local addresses are refused")
	// ErrLoopback: 127.0.0.0/8 and ::1, the reconciler's own host (its
	// API, metrics, a sidecar, a node-local agent with host networking).
	ErrLoopback error = refusedKind("loopback addresses are refused")
	// ErrUnspecified: 0.0.0.0/8 and ::, which a connection takes to the
	// reconciler's own host.
	ErrUnspecified error = refusedKind("unspecified addresses are refused")
	// ErrMetadata: the cloud metadata and host services outside the
	// link-local ranges (see metadataAddrs).
	ErrMetadata error = refusedKind("cloud metadata addresses are refused")
)

// refusedKind is one kind of refused address; it is ErrAddressRefused too.
type refusedKind string

func (k refusedKind) Error() string        { return string(k) }
func (k refusedKind) Is(target error) bool { return target == ErrAddressRefused }

// metadataAddrs are the metadata services that live outside the link-local
// and loopback ranges: each hands out the instance's credentials or
// configuration.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("fd00:ec2::254"):   "EC2's IPv6 instance metadata",
	netip.MustParseAddr("fd20:ce::254"):    "Google Compute Engine's IPv6 metadata server",
	netip.MustParseAddr("100.100.100.200"): "Alibaba Cloud's instance metadata",
	netip.MustParseAddr("168.63.129.16"):   "Azure's WireServer",
	netip.MustParseAddr("192.0.0.192"):     "Oracle Cloud's instance metadata",
}

var (
	loopback4    = netip.MustParsePrefix("127.0.0.0/8")
	unspecified4 = netip.MustParsePrefix("0.0.0.0/8")
	// embedding4 are IPv6 ranges whose last 32 bits are an IPv4 address a
	// gateway or the host's stack reaches for them: NAT64's well-known and
	// local-use prefixes (RFC 6052, RFC 8215) and the deprecated
	// IPv4-compatible addresses (::a.b.c.d).
	embedding4 = []netip.Prefix{
		netip.MustParsePrefix("64:ff9b::/96"),
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("::/96"),
	}
)

// embeddedIPv4 returns the IPv4 address ip stands for when it is in one of
// the embedding4 ranges (not :: and ::1 themselves, which are IPv6's own).
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() || ip.IsUnspecified() || ip.IsLoopback() || !slices.ContainsFunc(embedding4, func(pf netip.Prefix) bool { return pf.Contains(ip) }) {
		return netip.Addr{}, false
	}
	b := ip.As16()
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
}

// addressPolicy is the dialer's check of every address it connects to,
// after name resolution and on every redirect (each connection is checked
// where it goes, not where a name or URL said).
type addressPolicy struct {
	// allow opens ranges that are refused by default.
	allow []netip.Prefix
}

// refused returns why ip may not be reached (nil when it may).
func (p addressPolicy) refused(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	if slices.ContainsFunc(p.allow, func(pf netip.Prefix) bool { return pf.Contains(ip) }) {
		return nil
	}
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return fmt.Errorf("%w (cloud instance metadata lives there)", ErrLinkLocal)
	case ip.IsLoopback() || loopback4.Contains(ip):
		return fmt.Errorf("%w (the reconciler's own host)", ErrLoopback)
	case ip.IsUnspecified() || unspecified4.Contains(ip):
		return fmt.Errorf("%w (a connection there reaches the reconciler's own host)", ErrUnspecified)
	}
	if what, ok := metadataAddrs[ip]; ok {
		return fmt.Errorf("%w (%s)", ErrMetadata, what)
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if err := p.refused(v4); err != nil {
			return fmt.Errorf("%w, which %s stands for", err, ip)
		}
	}
	return nil
}

// control is the net.Dialer's Control: it runs before every connection.
func (p addressPolicy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("verification request to %s: %w", address, err)
	}
	if err := p.refused(ap.Addr()); err != nil {
		return fmt.Errorf("verification request to %s: %w; only an allowed range opens it", ap.Addr().Unmap(), err)
	}
	return nil
}

// defaultClient is the client of http and prometheus tasks: the default
// transport's settings, with a dialer that refuses what p refuses, and no
// proxy: through HTTP(S)_PROXY the dialer would only see the proxy's
// address, and the proxy would fetch the metadata address for it.
func defaultClient(p addressPolicy) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.control}).DialContext
	return &http.Client{Transport: tr}
}
