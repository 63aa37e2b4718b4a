// Package status is what the reconciler reports about an environment: for
// every service, the desired images against the live ones in each target
// (Observation, written by the leader's worker after each plan), and the
// whole environment as the HTTP API shows it (Environment: the observation
// with the pending plan, the apply in flight, the history and the locks).
// The daemon writes it, internal/api serves it.
package status
