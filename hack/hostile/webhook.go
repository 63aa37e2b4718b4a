package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// bodySize is GitHub's own cap on payloads, the size an attacker would send.
const bodySize = 25 << 20

// flood serves a webhook receiver and sends it n concurrent 25 MiB POSTs
// with a bad signature, twice: once announcing the size in Content-Length,
// once chunked (no length). The bodies are generated as they are sent, so
// the peak RSS measured is the receiver's.
func flood(ctx context.Context, n int) error {
	recv, err := webhook.New("a-secret")
	if err != nil {
		return err
	}
	recv.Handle("push", func(context.Context, webhook.Event) error { return nil })
	srv := httptest.NewServer(recv)
	defer srv.Close()
	runtime.GC()
	idle := rss()
	for _, chunked := range []bool{false, true} {
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code := post(ctx, srv.URL, chunked)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		var keys []int
		for k := range codes {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		fmt.Printf("webhook: %d concurrent 25 MiB bad-signature POSTs (chunked=%v) in %v; answers:", n, chunked, time.Since(start).Round(time.Millisecond))
		for _, k := range keys {
			fmt.Printf(" %d×%d", codes[k], k)
		}
		fmt.Println()
	}
	fmt.Printf("idle RSS %.0f MiB, peak RSS %.0f MiB: %.0f MiB above idle\n", idle, peakRSS(), peakRSS()-idle)
	return nil
}

func post(ctx context.Context, url string, chunked bool) int {
	body := io.LimitReader(zeros{}, bodySize)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return -1
	}
	req.ContentLength = bodySize
	if chunked {
		req.ContentLength = -1
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "d")
	req.Header.Set("X-Hub-Signature-256", "sha256=00")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0 // the server closed the connection before reading everything
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// zeros is an endless body of spaces (valid JSON whitespace).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
