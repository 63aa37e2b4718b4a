// Package lockapi is the REST API of pkg/lock's deploy locks: Handler
// serves a lock.Service under /api/v1/locks and /api/v1/check (a bearer
// token, or the caller the mounting server verified: WithCaller), answering
// errors {"error", "code"} by its one table (StatusOf) or the mounting
// server's writer (WithErrorWriter), and a refusal by locks 423 with them;
// Client is its client, whose errors are the lock package's own again (a
// 423 a *lock.LockedError, a 404 lock.ErrNotFound, any other an *APIError).
package lockapi
