package cli

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPrbotServerRefusesHugeTokens: prbot serve's server refuses an
// Authorization header of 10 MB (an "ID token" nobody issues) with 431
// before any handler reads it, cuts off headers that never end, and serves
// an ordinary request.
func TestPrbotServerRefusesHugeTokens(t *testing.T) {
	var handled atomic.Int64
	hs := prbotHTTPServer("", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { handled.Add(1) }))
	hs.ReadHeaderTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	base := "http://" + ln.Addr().String()

	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/bumps", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer eyJ"+strings.Repeat("A", 10<<20))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || handled.Load() != 0 {
		t.Errorf("a 10 MB token = %d, handled %d times; want 431, never handled", resp.StatusCode, handled.Load())
	}

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /api/v1/bumps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer eyJ"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, c)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("headers that never end held the connection %s", took)
	}

	resp, err = http.Post(base+"/api/v1/bumps", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if handled.Load() != 1 {
		t.Errorf("an ordinary request was handled %d times", handled.Load())
	}
}
