package api

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Timeouts are the HTTP server's limits on one connection: how long a
// client may take to send its headers and its whole request, how long a
// response may take, and how long an idle keep-alive connection is kept.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts leave room for the largest webhook body (5 MiB) on a slow
// link and for the slowest API answer, while a client that trickles its
// headers or body holds a connection for seconds, not forever.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: 2 * time.Minute}

// Default per-token rate limit of /api/: a steady 20 requests a second, in
// bursts of up to 100 (CI jobs checking locks in parallel share one token).
const (
	DefaultRatePerSecond = 20
	DefaultRateBurst     = 100
)

// maxHeaderBytes bounds a request's headers (Go's default is 1 MiB).
const maxHeaderBytes = 64 << 10

// httpServer is the server Serve runs, with every timeout set.
func (s *Server) httpServer() *http.Server {
	t := s.o.timeouts
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle, MaxHeaderBytes: maxHeaderBytes}
}

// tooMany answers 429 with Retry-After in whole seconds (at least 1).
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Max(1, math.Ceil(wait.Seconds())))))
	writeError(w, http.StatusTooManyRequests, "too many requests for this token; retry after the Retry-After seconds")
}
