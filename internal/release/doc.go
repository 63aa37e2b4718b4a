// Package release is the release approval of an environment's runs
// (Releaser): an approval task after the deployment in a stage's sequence.
// The wait begins after the run's deployment and verification (Await), is
// kept in the state and shown on the gate, is held across newer revisions
// that change nothing here and superseded by one that does (Hold), and is
// decided by a person on any replica (Decide); the rest of the run then goes
// on through the worker's steps (pass.Runner). A decision taken before the
// wait began is stale (StaleFor, TakenBefore). The daemon's worker builds
// one Releaser per environment and gives it what it uses (Config); it
// imports no component, and its tests start nothing.
package release
