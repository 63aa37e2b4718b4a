// Package lock implements deploy locks: records that forbid deploying into a
// path such as apps/staging/a/auth-app while test automation, an incident or
// another deploy is in progress.
//
// A lock is written at exactly one path; checking a path walks every prefix of
// it, so a lock at apps/staging blocks apps/staging/a/auth-app. Locks expire and
// expired locks never block. Storage is an interface with a Memory and a
// Kubernetes implementation; Service applies the rules on top of a Storage.
// Checker adapts a Service to the reconciler's LockChecker and LockHolder
// interfaces. The REST API over a Service, and its client, are
// pkg/lock/lockapi's.
package lock
