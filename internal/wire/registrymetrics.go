package wire

import (
	"net/http"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"
)

// registryRequests counts the reconciler's requests to image registries
// (digest checks and pinning) by status code, as stagehand_github_requests_total
// counts GitHub's.
func registryRequests() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stagehand_registry_requests_total",
		Help: "Requests sent to image registries to check and pin digests, by HTTP status code (401: the token challenge that precedes most authenticated requests), or code=error when no answer came (refused, timed out, TLS).",
	}, []string{"code"})
}

// countingTransport counts each request's answer in requests.
type countingTransport struct {
	base     http.RoundTripper
	requests *prometheus.CounterVec
	insecure map[string]bool // registry.insecure
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	switch {
	case err == nil:
		c.requests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
	case req.Context().Err() != nil:
		// A request abandoned by its caller says nothing of the registry.
	case c.probe(req):
		// go-containerregistry pings a registry it may reach over plain
		// http (registry.insecure, localhost, private addresses) over
		// https first: only the http ping's failure counts.
	default:
		c.requests.WithLabelValues("error").Inc()
	}
	return resp, err
}

// probe says whether req is the https ping of a registry that
// go-containerregistry pings over http next.
func (c countingTransport) probe(req *http.Request) bool {
	if req.URL.Scheme != "https" || req.URL.Path != "/v2/" {
		return false
	}
	if c.insecure[req.URL.Host] {
		return true
	}
	r, err := name.NewRegistry(req.URL.Host)
	return err == nil && r.Scheme() == "http"
}

// registryTransport is the transport of the reconciler's registry requests:
// go-containerregistry's default, counted.
func (d *deployParts) registryTransport() http.RoundTripper {
	insecure := map[string]bool{}
	for _, h := range d.cfg.Registry.Insecure {
		insecure[h] = true
	}
	return countingTransport{base: remote.DefaultTransport, requests: d.registryRequests, insecure: insecure}
}

// Collectors returns the metrics of the parts the Builder built itself
// (stagehand_registry_requests_total), for the process's registry.
func (d *deployParts) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.registryRequests}
}
