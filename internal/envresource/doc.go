// Package envresource keeps the Environment resources (environments.stagehand.io,
// internal/crds): one per configured environment in the state namespace,
// whose status is the API's environment view (internal/status) in
// Kubernetes' conventions, with the conditions Ready, Deployed,
// AwaitingApproval, Locked and Degraded, so that `kubectl get environments`,
// `kubectl wait --for=condition=Deployed` and RBAC on environments/<name> work.
//
// The Writer is fed by the daemon from what it recorded, on the replica that
// works the environment, and writes only when the status changed: an idle
// pass makes no write. Events (events.go) tell an environment's history on
// its object as an approval.Gate that decides nothing.
package envresource
