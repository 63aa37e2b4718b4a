// Package herald is what an environment's approval gate is told by the
// daemon's worker, and what it was told last: Propose (remembering a plan
// the gate accepted, so that one it refused or accepted a repropose period
// ago is proposed again, and a rate limit it answered), Started, Completed,
// Superseded and Tally. A report the gate refuses is logged and counted
// (internal/meter); an outcome or a supersession is kept in the state to be
// reported again (internal/outbox). It imports no component.
package herald
