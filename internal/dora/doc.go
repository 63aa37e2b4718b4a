// Package dora computes the four DORA figures of an environment — deployment
// frequency, lead time for changes, change failure rate and time to restore
// — from its history (approval.Entry), and counts them as Prometheus metrics
// as deploys are recorded.
//
// A deploy is a history entry of an apply that changed something and ended:
// succeeded, failed or rolled back (an automatic rollback of a failed
// rollout). Rejected plans and interrupted applies (continued by the next
// leader as another entry) are not deploys. Deploys reads a history as
// deploys, judging each once: a change failure (failed, rolled back, or
// followed within the rollback window by an incident rollback, `reconciler
// rollback --now`, whose entry carries PinnedTo), the incident a succeeded
// deploy ends (time to restore), and where its lead time starts (the commit
// time of the first commit of its range, from git through Commits, kept in
// no record: commit times never change, and the state's history keeps its
// size).
//
// Report is what GET /api/v1/environments/{env}/dora answers over a window,
// saying how far back the history reaches; Metrics counts each deploy once,
// on the replica that works the environment, across restarts and handovers,
// by keeping the newest history entry counted in a ConfigMap written with
// the resourceVersion it read (Marks).
package dora
