// Package window keeps an environment's plans out of the cluster while its
// deploy windows (environments.<env>.windows, compiled by internal/policy
// into a Calendar) are closed. Its Guard is what the daemon's worker asks
// before it applies: Judge says whether plans may be applied now, on the
// API server's clock; while they may not, an approved or auto-approved plan
// is deferred (Defer, DeferApproved): nothing is patched, the phase is
// Deferred in the state, the gates that hear it (approval.Deferrer: the
// notifications) are told, and a timer (not a poll) wakes the worker when
// the windows open, to judge again and apply. The phase is kept in the
// state, so another replica, or this one after a restart, finds the plan
// still deferred and judges it the same.
package window
