// Package api serves the reconciler's HTTP API over a Backend (the daemon
// implements it): health, readiness and metrics without a token; the GitHub
// webhook endpoint (HMAC-signed); and, under /api/v1 with the bearer token of
// server.apiTokenFile, the environments as internal/status shows them, their
// layout and history, approving and rejecting the pending plan through the
// Backend's approval.Decider, and pkg/lock/lockapi's REST API. Every route is listed
// in one table (routes), documented in docs/reference/api.md; a test keeps the two in
// step.
//
// A new endpoint is a row in routes, a handler over the Backend (widen the
// interface only for what the daemon must answer), an entry in docs/reference/api.md
// and a test.
package api
