package meter

// Reason is why something failed: the stage label of
// stagehand_failures_total.
type Reason string

// The reasons a step, a write or a report fails.
const (
	ReasonFetch    Reason = "fetch"
	ReasonResolve  Reason = "resolve"
	ReasonPlan     Reason = "plan"
	ReasonApply    Reason = "apply"
	ReasonState    Reason = "state"
	ReasonGate     Reason = "gate"
	ReasonRollback Reason = "rollback"
)
