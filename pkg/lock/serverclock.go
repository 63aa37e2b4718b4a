package lock

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// ServerClock returns a clock that follows the Kubernetes API server of cfg
// rather than this host: local (time.Now when nil) shifted by the server's
// offset, measured once from the Date header of a GET /version (to the
// second; locks are kept in whole seconds). A process whose own clock is off
// — a laptop two hours slow — then writes created, updated and expiry times
// that the reconciler, on the server's time, reads right.
func ServerClock(ctx context.Context, cfg *rest.Config, local func() time.Time) (func() time.Time, error) {
	if local == nil {
		local = time.Now
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's time: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's time: %w", err)
	}
	sent := local()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's time: %w", err)
	}
	resp.Body.Close()
	received := local()
	server, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return nil, fmt.Errorf("reading the API server's time: GET /version answered %s without a usable Date header: %w", resp.Status, err)
	}
	// Date is truncated to the second: the server's time was within
	// [server, server+1s) at some instant between sent and received.
	mid := sent.Add(received.Sub(sent) / 2)
	offset := server.Add(500 * time.Millisecond).Sub(mid)
	return func() time.Time { return local().Add(offset) }, nil
}
