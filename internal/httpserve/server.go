package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Limits are an HTTP server's limits on one connection: how long a client
// may take to send its headers and its whole request, how long a response
// may take, how long an idle keep-alive connection is kept, and the largest
// header block (a larger one gets 431 before any handler runs).
type Limits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
}

// DefaultLimits leave room for the largest webhook body (5 MiB) on a slow
// link and for the slowest answer, while a client that trickles its headers
// or body holds a connection for seconds, not forever; 64 KiB of headers
// hold any bearer token issued (an OIDC ID token is about 1 KiB), where Go's
// default is 1 MiB.
var DefaultLimits = Limits{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
	WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}

// DefaultShutdownGrace is how long requests in progress may finish once
// serving stops, unless told otherwise.
const DefaultShutdownGrace = 5 * time.Second

// Check says what is wrong with l: every limit must be positive.
func (l Limits) Check() error {
	if l.ReadHeaderTimeout <= 0 || l.ReadTimeout <= 0 || l.WriteTimeout <= 0 || l.IdleTimeout <= 0 {
		return fmt.Errorf("server timeouts %+v: each must be positive", l)
	}
	if l.MaxHeaderBytes < 1024 {
		return fmt.Errorf("maxHeaderBytes %d: want at least 1024", l.MaxHeaderBytes)
	}
	return nil
}

// New returns the server of h with every limit of l set.
func New(h http.Handler, l Limits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes}
}

// Serve serves srv on ln until ctx ends, then shuts it down, letting the
// requests in progress finish for at most grace (then their connections
// are closed). It returns nil after a shutdown, and the error when serving
// fails.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close() // the grace is over: what is still open is cut
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	}
	return nil
}
