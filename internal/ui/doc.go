// Package ui is the web page of the reconciler: every environment at a
// glance (services × environments), an environment's pending plan with
// Approve and Reject, its history and include layout, "where is it
// running?", deploy locks, and live updates by server-sent events. Pages are
// rendered on the server with html/template from files embedded in the
// binary; a little hand-written script swaps in fresh content when an event
// says an environment changed. Sign-in is GitHub's OAuth web flow (or, for
// demos on loopback, a fixed login); the login lives in an encrypted,
// HttpOnly, SameSite=Lax __Host- cookie and every form carries a CSRF
// token. A live-update stream asks the policy again every minute and ends
// when its reader may no longer read.
//
// The page reads through Backend (the daemon implements it) and decides
// through approval.Decider, as the API and the GitHub check run do; while a
// freeze holds a plan, it lets it through by approval.BreakGlasser, to a
// login the API's own break-glass rule allows (WithBreakGlass).
package ui
