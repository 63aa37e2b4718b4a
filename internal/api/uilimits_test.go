package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/ui"
)

// TestWebPageBehindTheServersLimits: the web page is served by the API's
// server, so its connection limits hold for the page's routes too: a form
// whose body trickles and headers that never end are cut off, a 1 MiB cookie
// is refused (431) before any handler runs, while an open event stream
// outlives the read and write timeouts (it moves its own write deadline).
func TestWebPageBehindTheServersLimits(t *testing.T) {
	page, err := ui.New(&backend{}, ui.WithDemoLogin("demo"), ui.WithPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	short := httpserve.Limits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond, WriteTimeout: 600 * time.Millisecond, IdleTimeout: time.Second, MaxHeaderBytes: 64 << 10}
	s, err := New(&backend{}, withOps(t), WithLimits(short), WithUI(page, ui.Patterns()...))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()

	for _, tc := range []struct{ name, sent string }{
		{"headers never finished", "GET /locks HTTP/1.1\r\nHost: x\r\nCookie: a=b\r\n"},
		{"form body never sent", "POST /locks HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\npath="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.sent); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, c) // returns when the server closes the connection
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the server kept the connection %v", took)
			}
		})
	}

	t.Run("cookie of 1 MiB", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/locks", nil)
		req.Header.Set("Cookie", "stagehand_session="+strings.Repeat("a", 1<<20))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("GET /locks with a 1 MiB cookie = %d, want 431", resp.StatusCode)
		}
	})

	t.Run("event stream outlives the timeouts", func(t *testing.T) {
		signin, err := http.NewRequest(http.MethodPost, base+"/signin/demo", nil)
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(signin)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cookies := resp.Cookies()
		if len(cookies) == 0 {
			t.Fatalf("demo sign-in = %d without a cookie", resp.StatusCode)
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /events HTTP/1.1\r\nHost: x\r\nCookie: "+cookies[0].Name+"="+cookies[0].Value+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended before ready: %v", err)
			}
			if strings.HasPrefix(line, "event: ready") {
				break
			}
		}
		// Three write timeouts later the server has not closed it: reading waits for the next event.
		_ = c.SetReadDeadline(time.Now().Add(3 * short.WriteTimeout))
		for {
			_, err := br.ReadString('\n')
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
			if err != nil {
				t.Fatalf("the stream ended after %s: %v", 3*short.WriteTimeout, err)
			}
		}
	})
}
