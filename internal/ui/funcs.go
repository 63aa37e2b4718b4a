package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// cellStates are the states in the legend, in its order.
var cellStates = []string{status.CellInSync, status.CellPending, status.CellRolling, status.CellOutOfSync,
	status.CellBlocked, status.CellProblem, status.CellFailed, status.CellUnknown}

// stateIcons pairs each state with a symbol, so colour is never the only signal.
var stateIcons = map[string]string{
	status.CellInSync: "✓", status.CellPending: "◔", status.CellRolling: "↻", status.CellOutOfSync: "≠",
	status.CellBlocked: "⊘", status.CellProblem: "⚠", status.CellFailed: "✗", status.CellUnknown: "?",
}

// cellOf names a service state (status.State*) as the matrix does.
func cellOf(state string) string {
	switch state {
	case status.StateInSync:
		return status.CellInSync
	case status.StateOutOfSync:
		return status.CellOutOfSync
	case status.StateBlocked:
		return status.CellBlocked
	case status.StateProblem:
		return status.CellProblem
	}
	return status.CellUnknown
}

// stateClass is a state as a CSS class suffix: "rolling out" → "rolling-out".
func stateClass(st string) string { return strings.ReplaceAll(st, " ", "-") }

// revLink is a revision and its commit URL, for the "rev" template.
type revLink struct{ Rev, URL string }

// ago writes a duration in the past as people say it.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}
