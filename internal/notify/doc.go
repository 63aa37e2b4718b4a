// Package notify tells chat rooms and event buses about plans and deploys:
// a Notifier is an approval.Gate that decides nothing (Propose returns
// Decision{}) and turns what a gate hears into CloudEvents
// (sh.stagehand.plan.pending, .plan.approved, .plan.rejected,
// .plan.superseded, .deploy.succeeded, .deploy.failed, .deploy.interrupted),
// sent to the sinks of reconciler.yaml's notifications: as a Slack Block Kit
// message, a Microsoft Teams Adaptive Card, a signed CloudEvent in JSON
// (webhook) or a binary-mode CloudEvent over HTTP (cloudevents).
//
// Delivery never holds up a worker: each sink has a bounded queue (the
// oldest message is dropped when it is full) and its own goroutine that
// sends with a per-request timeout and retries with exponential backoff,
// honouring Retry-After on 429 and 503. Outcomes are counted in
// stagehand_notifications_total{sink,result}.
package notify
