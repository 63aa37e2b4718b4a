// Package delivery runs an environment's delivery sequence (pipeline.yaml's
// stages[].sequence) for each plan the daemon deploys: approval → deployment
// (apply and rollout) → test/evaluation (the sequence.Runners given to the
// daemon) → release, and its release approval (an approval task after the
// deployment). A Run keeps the run in the environment's state at every step,
// so that a new leader continues it, and announces every step to the
// sequence.Listener. The daemon's worker drives one Run per environment; the
// gate, the apply and the history stay the worker's.
package delivery
