// Package daemon runs the reconciler as a long-lived process: one worker per
// environment turns the newest git revision into a plan, waits at an approval
// Gate unless the environment skips confirmation, applies, and records the
// outcome in a state Store (ConfigMaps) that survives restarts. It also serves
// the HTTP API (health, metrics, environments, approvals, locks, webhooks) and
// takes part in leader election so that only one replica fetches and applies.
package daemon
