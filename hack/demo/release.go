package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// startStorefront serves the local stand-in for the shop's health endpoint
// (GET /healthz answers {"status":"ok"}), which prod's test task requests.
func (x *demo) startStorefront() (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the storefront: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	// The shop's Prometheus, for staging's evaluation task: every query's
	// answer is one sample of 0 (no 5xx responses), in the HTTP API's shape.
	mux.HandleFunc("GET /api/v1/query", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"0"]}]}}`+"\n", time.Now().Unix())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	x.storefront = "http://" + ln.Addr().String()
	return func() { _ = srv.Close() }, nil
}

// localPipeline points the example pipeline.yaml's verification tasks at
// what the demo serves, for seconds rather than minutes: prod's and
// staging's test tasks at the local storefront, staging's evaluation at its
// stand-in Prometheus; staging's Job task is left out (the demo's control
// plane runs no Job controller). prod's sequence is the example's
// ([approval, deployment, test, approval, release]); staging's is
// [deployment, test, evaluation, release].
func (x *demo) localPipeline(environments string) error {
	file := filepath.Join(environments, "pipeline.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s := string(b)
	for _, r := range []struct{ old, new string }{
		{"url: https://shop.example.com/healthz", "url: " + x.storefront + "/healthz"},
		{"url: https://shop.staging.example.com/healthz", "url: " + x.storefront + "/healthz"},
		{"address: http://prometheus.monitoring:9090", "address: " + x.storefront},
		{stagingJob, ""},
		{"duration: 2m", "duration: 3s"},
		{"duration: 1m", "duration: 3s"},
		{"duration: 5m", "duration: 3s"},
		{"interval: 30s", "interval: 1s"},
		{"interval: 5s", "interval: 1s"},
	} {
		if !strings.Contains(s, r.old) {
			return fmt.Errorf("%s: no %q to point at what the demo serves; update hack/demo with the example", file, r.old)
		}
		s = strings.ReplaceAll(s, r.old, r.new)
	}
	return os.WriteFile(file, []byte(s), 0o644)
}

// stagingJob is staging's Job task in the example pipeline.yaml.
const stagingJob = `      - name: test                  # a Job in apps-staging; pass = it succeeded
        properties:
          timeout: 5m
          job:
            image: ghcr.io/acme/smoke-tests:1.4.0
            args: [--suite, checkout]
`

// approveStaging: staging's plan waits for approval like prod's; once
// approved, its sequence verifies the deploy against what the demo serves.
func (x *demo) approveStaging(ctx context.Context) error {
	x.p.step("Approve staging",
		"staging's sequence in pipeline.yaml is [deployment, test, evaluation, release]: approved, it is deployed,",
		"the storefront is requested and its error ratio evaluated, and the deploy counts once both pass.")
	p, err := x.waitPending(ctx, "staging", false)
	if err != nil {
		return err
	}
	if err := x.decide(ctx, "staging", p.PlanHash, false); err != nil {
		return err
	}
	who, result, err := x.waitDeployed(ctx, "staging", p.PlanHash, false)
	if err != nil {
		return err
	}
	x.p.ok("staging approved by %s, deployed and verified: %s", who, result)
	return nil
}

// releaseProd: prod's sequence has a release approval after its test, so
// the approved plan, deployed and verified, waits for a person again;
// approving the same plan hash releases it.
func (x *demo) releaseProd(ctx context.Context) error {
	x.p.step("Release prod",
		"prod's sequence in pipeline.yaml is [approval, deployment, test, approval, release]: the deploy was verified",
		"(the storefront answered), and waits for a second decision before it counts and promotion may follow.")
	p, err := x.waitPending(ctx, "prod", true)
	if err != nil {
		return err
	}
	if err := x.decide(ctx, "prod", p.PlanHash, true); err != nil {
		return err
	}
	who, result, err := x.waitDeployed(ctx, "prod", p.PlanHash, true)
	if err != nil {
		return err
	}
	x.p.ok("released by %s: %s", who, result)
	return nil
}
