package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL, such as http://127.0.0.1:23456.
	URL string
}

// Binary finds the prometheus binary: $PROMETHEUS, else prometheus on PATH.
func Binary() (string, error) {
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("finding prometheus: %w; run `make prometheus` (Debian's prometheus package) or set PROMETHEUS", err)
	}
	return p, nil
}

// Start runs Prometheus scraping the given host:port targets every second
// (job "test", path /metrics) and stops it when the test ends. A missing
// binary fails the test: a verification test that silently did not run
// would prove nothing.
func Start(t testing.TB, targets ...string) *Server {
	t.Helper()
	return StartWith(t, Config{Targets: targets})
}

// Config is what StartWith's Prometheus scrapes and evaluates.
type Config struct {
	// Targets are the host:port targets scraped every second (job "test",
	// path /metrics).
	Targets []string
	// RuleFiles are Prometheus rule files (recording and alerting rules),
	// evaluated every second.
	RuleFiles []string
	// Storage is the TSDB directory to serve (data made beforehand, such
	// as blocks backfilled by promtool); empty: a new one.
	Storage string
}

// StartWith runs Prometheus as c says and stops it when the test ends; a
// missing binary fails the test, as Start's.
func StartWith(t testing.TB, c Config) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	q := make([]string, len(c.Targets))
	for i, tg := range c.Targets {
		q[i] = fmt.Sprintf("%q", tg)
	}
	rules := make([]string, len(c.RuleFiles))
	for i, f := range c.RuleFiles {
		rules[i] = fmt.Sprintf("%q", f)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [%s]\nscrape_configs:\n  - job_name: test\n    scrape_interval: 1s\n    static_configs:\n      - targets: [%s]\n",
		strings.Join(rules, ", "), strings.Join(q, ", "))
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	var logs strings.Builder
	var mu sync.Mutex
	storage := c.Storage
	if storage == "" {
		storage = filepath.Join(dir, "data")
	}
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+storage,
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &logs}, lockedWriter{&mu, &logs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	s := &Server{URL: "http://" + addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("prometheus exited: %v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("prometheus at %s not ready after 30s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Promtool finds the promtool binary (Debian's prometheus package ships it
// beside prometheus): $PROMTOOL, else promtool on PATH.
func Promtool() (string, error) {
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		return "", fmt.Errorf("finding promtool: %w; run `make prometheus` (Debian's prometheus package) or set PROMTOOL", err)
	}
	return p, nil
}

// WaitFor waits until query returns at least one series, so that a check
// starting after it sees scraped data.
func (s *Server) WaitFor(t testing.TB, query string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		n, err := s.series(ctx, query)
		if err == nil && n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus: %q returned nothing for 30s (last error: %v)", query, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Server) series(ctx context.Context, query string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/query?"+url.Values{"query": {query}}.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	return len(r.Data.Result), nil
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() > 64<<10 {
		return len(p), nil
	}
	return w.b.Write(p)
}
