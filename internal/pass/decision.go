package pass

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Decision is an approval or rejection on its way to a worker.
type Decision struct {
	Approve  bool
	PlanHash string
	Who      identity.Principal
	Reason   string
	// At is when the decision was taken, on this process's monotonic
	// clock (zero: handed over by another replica): one taken before a
	// release approval began to wait here is not for it.
	At    time.Time
	Reply chan Reply
	// Caller is the span of the request that took it (the API call, the
	// check run's webhook): the decision's span is its child. Invalid when
	// handed over by another replica.
	Caller trace.SpanContext
}

// Reply answers a Decision: the pending plan as it is now, or why the
// decision was not taken.
type Reply struct {
	Pending *approval.Pending
	Err     error
}

// Decided is a decision's pending plan, as a proposal, and how it is
// answered (once).
type Decided struct {
	Prop    approval.Proposal
	Pending *approval.Pending
	Reply   func(*approval.Pending, error)
}
