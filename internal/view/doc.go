// Package view answers what the API and the web page read of the
// environments, on any replica alike: an environment's status view
// (status.Environment: its phase, pending plan, apply in flight, sequence,
// pin, targets, history summaries, observation, deploy windows, locks, the
// Flagger Canaries an apply waits for, and its holder), its history and
// history entries, and the webhook deliveries recorded (approval.Deliveries).
// Everything is read from the state store, the lock service, the targets and
// the configuration it is given; it imports no component: the daemon embeds
// its Views.
package view
