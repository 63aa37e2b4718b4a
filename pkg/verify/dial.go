package verify

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrLinkLocal is wrapped by the error of a request an http or prometheus
// task sends to a link-local address.
var ErrLinkLocal = errors.New("link-local addresses are refused")

// awsMetadataV6 is the IPv6 address of EC2's instance metadata service, the
// one metadata address outside the link-local ranges.
var awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// refuseLinkLocal is the dialer's check of every address it connects to,
// after name resolution and on every redirect: the cloud metadata services
// (169.254.169.254, 169.254.170.2, fd00:ec2::254) hand out the credentials
// of the reconciler's node or pod, and no deployment is verified there.
func refuseLinkLocal(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("verification request to %s: %w", address, err)
	}
	ip := ap.Addr().Unmap()
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip == awsMetadataV6 {
		return fmt.Errorf("verification request to %s: %w (cloud instance metadata lives there)", ip, ErrLinkLocal)
	}
	return nil
}

// defaultClient is the client of http and prometheus tasks: the default
// transport's settings, with a dialer that refuses link-local addresses,
// and no proxy: through HTTP(S)_PROXY the dialer would only see the
// proxy's address, and the proxy would fetch the metadata address for it.
func defaultClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseLinkLocal}).DialContext
	return &http.Client{Transport: tr}
}
