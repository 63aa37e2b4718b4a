// Package daemon runs the reconciler as a long-lived process: one worker per
// environment turns the newest git revision into a plan, proposes it to an
// approval.Gate (internal/approval) unless the environment skips
// confirmation, applies what is approved, and records the outcome in the
// state Store (internal/state: ConfigMaps) that survives restarts. The Daemon is the
// approval.Decider of every approval path: Approve and Reject work on any
// replica (a replica that does not lead hands the decision to the leader
// through the Store), and so do push webhooks (a replica that does not lead
// annotates the ConfigMap WakeConfigMapName, which the leader watches and
// polls the source on at once; see wake.go). It is the api.Backend that
// internal/api serves over HTTP (environments, approvals, locks, readiness),
// and takes part in leader election (internal/lease: one Lease, or a Lease
// per environment) so that only one replica works an environment.
package daemon
