// Package meter holds the reconciler's Prometheus metrics on a private
// registry: what a pass, a step, an apply and a verification took, the
// failures by reason, leadership, the plans waiting for a person, the
// outcome reports kept for the gate, how long a push takes to its first
// patch, the git source's health and the API server's clock offset. The
// daemon counts through a *Metrics it owns; every metric is documented in
// docs/observability.md and listed in docs/reference.
package meter
