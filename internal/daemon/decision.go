package daemon

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// decision is an approval or rejection on its way to a worker.
type decision struct {
	approve  bool
	planHash string
	who      identity.Principal
	reason   string
	// at is when the decision was taken, on this process's monotonic
	// clock (zero: handed over by another replica): one taken before a
	// release approval began to wait here is not for it.
	at    time.Time
	reply chan decisionReply
	// caller is the span of the request that took it (the API call, the
	// check run's webhook): the decision's span is its child. Invalid when
	// handed over by another replica.
	caller trace.SpanContext
}

type decisionReply struct {
	pending *approval.Pending
	err     error
}
