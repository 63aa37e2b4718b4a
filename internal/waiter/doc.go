// Package waiter judges, from successive reads of an environment's view (the
// API's, internal/status), whether a deploy a CI job waits for is done: the
// revision (or a service's version) deployed and verified, failed, rejected,
// rolled back or superseded by a newer revision, or still on its way. It reads
// the Deployed condition the Environment resource shows (internal/envresource),
// so `reconciler wait` and `kubectl wait --for=condition=Deployed` agree.
// Judge.Object reads the Environment object's status instead, by the same
// rules, for `reconciler wait --kubeconfig`.
package waiter
