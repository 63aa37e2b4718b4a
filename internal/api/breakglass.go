package api

import (
	"fmt"
	"net/http"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// BreakGlassRequest is the body of POST /api/v1/environments/{env}/break-glass.
type BreakGlassRequest struct {
	// PlanHash is the plan to let through the closed deploy windows, as the caller saw it.
	PlanHash string `json:"planHash"`
	// Reason says why (required; one line of at most 500 characters): it is kept in the history and
	// sent with the Event and the notifications.
	Reason string `json:"reason"`
}

// breakGlass lets the pending plan named through the environment's closed deploy windows (the backend's
// approval.BreakGlasser), as the verified caller, with a reason.
func (h *handlers) breakGlass(w http.ResponseWriter, r *http.Request) {
	env := r.PathValue("env")
	bg, ok := h.b.(approval.BreakGlasser)
	if !ok {
		fail(w, refuse(kindNotImplemented, "break-glass is not served by this reconciler"))
		return
	}
	var req BreakGlassRequest
	if err := decodeStrict(w, r, &req, `{"planHash": "...", "reason": "..."}`); err != nil {
		fail(w, err)
		return
	}
	switch {
	case req.PlanHash == "":
		fail(w, refuse(kindBadRequest, `planHash is required; want {"planHash": "...", "reason": "..."}`))
		return
	case len(req.PlanHash) > maxPlanHash:
		fail(w, refuse(kindBadRequest, "planHash is %d bytes long; at most %d are accepted", len(req.PlanHash), maxPlanHash))
		return
	}
	reason, err := approval.CheckReason(req.Reason)
	if err != nil {
		fail(w, refuse(kindBadRequest, "reason: %v", err))
		return
	}
	who, ok := verifiedPrincipal(w, r, "approver", "")
	if !ok {
		return
	}
	p, err := bg.BreakGlass(r.Context(), env, req.PlanHash, approval.Why{By: who, Reason: reason})
	if err != nil {
		fail(w, err)
		return
	}
	resp := DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash, Status: "break-glass",
		Approvers: p.Approvers(), Required: p.Needed()}
	if p.Complete() {
		resp.Message = fmt.Sprintf("break-glass by %s; applying revision %s to %s through its closed deploy windows", who, gitsource.ShortRevision(p.Revision), env)
	} else {
		resp.Message = fmt.Sprintf("break-glass by %s; %s; revision %s goes out through the closed deploy windows of %s once approved",
			who, p.Tally(), gitsource.ShortRevision(p.Revision), env)
	}
	writeJSON(w, http.StatusAccepted, resp)
}
