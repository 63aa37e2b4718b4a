// Package outbox keeps the outcomes an approval gate refused and reports
// them again until the gate takes them.
//
// An outcome the gate could not report (GitHub still answering errors after
// its client's retries) would leave the plan's check run "in progress"
// forever, and prbot's requires.healthy would never see the result. So the
// daemon's worker keeps it in the environment's state (unreported.json,
// internal/state) through its Queue, which reports it again on later
// passes, backing off, until the gate takes it; then it is removed. The
// state survives restarts and is what the next leader reads.
//
// Made durable: Completed (the end of an approved or rejected plan) and
// Superseded (a plan withdrawn). Not made durable: Started (overtaken by
// Completed) and Tally (shown again when the pending plan is proposed
// again).
//
// Bounded: at most MaxKept per environment (a newer one drops the oldest),
// each tried at most MaxAttempts times, waiting Backoff·2ⁿ between
// attempts up to BackoffMax. What is given up is logged and counted
// (stagehand_outcome_reports_dropped_total); stagehand_outcome_reports_unreported
// says how many wait.
//
// A replica older than this knows nothing of unreported.json: a state write
// it makes (while a rolling upgrade runs) drops what was kept there.
package outbox
