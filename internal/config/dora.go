package config

import "time"

// maxRollbackWindow is the longest dora.rollbackWindow.
const maxRollbackWindow = 30 * 24 * time.Hour

// DORA configures the DORA figures (internal/dora): the metrics, GET
// /api/v1/environments/{env}/dora, `reconciler dora` and the page's panel.
type DORA struct {
	// RollbackWindow is how long after a deploy an incident rollback
	// (`reconciler rollback --now`) still makes it a change failure (0: 24h).
	RollbackWindow Duration `json:"rollbackWindow,omitempty"`
}

func (d DORA) validate(bad func(field, format string, a ...any)) {
	if w := d.RollbackWindow.Duration; w < 0 || w > maxRollbackWindow {
		bad("dora.rollbackWindow", "%s: want a duration from 0 (the default, 24h) to %s", d.RollbackWindow, maxRollbackWindow)
	}
}
