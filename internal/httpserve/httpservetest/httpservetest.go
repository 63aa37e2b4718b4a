// Package httpservetest holds every Stagehand door to httpserve's contract
// with one set of checks: internal/api's tests and prbot serve's run the same.
package httpservetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/httpserve"
)

// Door is a server under test, served with limits whose ReadHeaderTimeout
// is short (a second or less).
type Door struct {
	// Addr is the server's host:port.
	Addr string
	// ReadHeaderTimeout is the server's.
	ReadHeaderTimeout time.Duration
	// TooLarge is a path that takes a POST body of at most MaxBody bytes
	// (with Content-Type application/json and the Headers given) and
	// refuses a larger one from its Content-Length.
	TooLarge string
	MaxBody  int64
	Headers  map[string]string
	// Route is a GET route the server serves, for a wrong method.
	Route string
}

// Check runs the checks on d: a path no route serves is 404, a route asked
// with the wrong method 405 with Allow, a body over its cap 413, each with
// the JSON error body (httpserve.Error, code named); headers over the
// server's MaxHeaderBytes are 431 before any handler; a client that
// trickles its headers is cut off, unanswered, after the read-header
// timeout.
func Check(t *testing.T, d Door) {
	t.Helper()
	base := "http://" + d.Addr
	t.Run("unknown route", func(t *testing.T) {
		resp := do(t, http.MethodGet, base+"/no/such/route", nil)
		wantError(t, resp, http.StatusNotFound, httpserve.CodeNotFound)
	})
	t.Run("wrong method", func(t *testing.T) {
		resp := do(t, http.MethodDelete, base+d.Route, nil)
		wantError(t, resp, http.StatusMethodNotAllowed, httpserve.CodeMethodNotAllowed)
		if !strings.Contains(resp.Header.Get("Allow"), http.MethodGet) {
			t.Errorf("Allow = %q, want GET in it", resp.Header.Get("Allow"))
		}
	})
	t.Run("body too large", func(t *testing.T) {
		// The request announces one byte over the cap and sends none of it:
		// the answer must come from the announcement, before any reading.
		c, err := net.Dial("tcp", d.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var b strings.Builder
		fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", d.TooLarge, d.MaxBody+1)
		for k, v := range d.Headers {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
		b.WriteString("\r\n")
		if _, err := io.WriteString(c, b.String()); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, resp, http.StatusRequestEntityTooLarge, httpserve.CodeTooLarge)
	})
	t.Run("headers too large", func(t *testing.T) {
		resp := do(t, http.MethodGet, base+d.Route, map[string]string{"Authorization": "Bearer eyJ" + strings.Repeat("A", 2<<20)})
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("2 MiB of headers = %d, want 431", resp.StatusCode)
		}
	})
	t.Run("slow headers", func(t *testing.T) {
		c, err := net.Dial("tcp", d.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET "+d.Route+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer eyJ"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, _ := io.ReadAll(c) // returns when the server closes the connection
		if took := time.Since(start); took > d.ReadHeaderTimeout+2*time.Second {
			t.Errorf("headers that never end held the connection %s (readHeaderTimeout %s)", took, d.ReadHeaderTimeout)
		}
		if len(got) != 0 {
			t.Errorf("answered headers that never ended with %q, want the connection closed", got)
		}
	})
}

// do sends method to url with no body and the headers h.
func do(t *testing.T, method, url string, h map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// wantError checks resp is status with the JSON error body of code.
func wantError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Errorf("status %d %s, want %d", resp.StatusCode, b, status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json: %s", ct, b)
	}
	var e httpserve.Error
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" || e.Code != code {
		t.Errorf("body %s (%v): want {\"error\": \"…\", \"code\": %q}", b, err, code)
	}
}
