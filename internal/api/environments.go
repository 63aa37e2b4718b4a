package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// maxBody caps request bodies of the approval endpoints.
const maxBody = 64 << 10

func (h *handlers) listEnvironments(w http.ResponseWriter, r *http.Request) {
	names := h.order(r.Context())
	out := make([]status.Environment, 0, len(names))
	for _, env := range names {
		v, err := h.b.Environment(r.Context(), env)
		if err != nil {
			fail(w, err)
			return
		}
		v.Layout = nil
		v.History = nil
		out = append(out, *v)
	}
	writeJSON(w, http.StatusOK, EnvironmentsResponse{Environments: out})
}

func (h *handlers) getEnvironment(w http.ResponseWriter, r *http.Request) {
	v, ok := h.environmentOr404(w, r)
	if !ok {
		return
	}
	v.Layout = nil
	v.History = nil
	writeJSON(w, http.StatusOK, v)
}

func (h *handlers) getLayout(w http.ResponseWriter, r *http.Request) {
	v, ok := h.environmentOr404(w, r)
	if !ok {
		return
	}
	if v.Layout == nil {
		fail(w, refuse(kindNoLayout, "no layout for environment %q yet: it has not been resolved", v.Name))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"environment": v.Name, "revision": v.Revision, "layout": v.Layout})
}

func (h *handlers) getHistory(w http.ResponseWriter, r *http.Request) {
	env := r.PathValue("env")
	history, err := h.b.History(r.Context(), env)
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]approval.Entry, 0, len(history))
	for _, e := range history {
		out = append(out, e.Summary())
	}
	writeJSON(w, http.StatusOK, HistoryResponse{Environment: env, History: out})
}

func (h *handlers) getHistoryEntry(w http.ResponseWriter, r *http.Request) {
	env, raw := r.PathValue("env"), r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		fail(w, refuse(kindBadRequest, "history entry id %q: want a positive integer, as the history list shows", truncate(raw, 64)))
		return
	}
	e, err := h.b.HistoryEntry(r.Context(), env, id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, HistoryEntryResponse{Environment: env, Entry: e})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (h *handlers) environmentOr404(w http.ResponseWriter, r *http.Request) (*status.Environment, bool) {
	v, err := h.b.Environment(r.Context(), r.PathValue("env"))
	if err != nil {
		fail(w, err)
		return nil, false
	}
	return v, true
}

// DecisionRequest is the body of POST .../approve and .../reject.
type DecisionRequest struct {
	PlanHash string `json:"planHash"`
	// Approver, if set, must be the caller's verified name: who decided
	// comes from the credentials (a token's name, a GitHub login, a
	// Kubernetes user), never from the request.
	Approver string `json:"approver,omitempty"`
	// Reason is an optional note for a rejection.
	Reason string `json:"reason,omitempty"`
}

// DecisionResponse is the answer to an accepted approval or rejection.
type DecisionResponse struct {
	Environment string `json:"environment"`
	Revision    string `json:"revision"`
	PlanHash    string `json:"planHash"`
	Status      string `json:"status"` // "approved" (apply queued), "pending" (more approvals needed) or "rejected"
	Message     string `json:"message"`
	// Approvers and Required are the plan's approvals so far and how many it needs (approvals.required).
	Approvers []string `json:"approvers,omitempty"`
	Required  int      `json:"required,omitempty"`
}

// Longest accepted fields of a DecisionRequest: a plan hash is
// "sha256:" and 64 hex digits; a reason is shown on check runs and history.
const (
	maxPlanHash = 128
	maxApprover = 256
	maxReason   = 4096
)

// check returns why req's fields are out of bounds, or "".
func (req DecisionRequest) check() string {
	for _, f := range []struct {
		name, value string
		max         int
	}{{"planHash", req.PlanHash, maxPlanHash}, {"approver", req.Approver, maxApprover}, {"reason", req.Reason, maxReason}} {
		if len(f.value) > f.max {
			return fmt.Sprintf("%s is %d bytes long; at most %d are accepted", f.name, len(f.value), f.max)
		}
	}
	return ""
}

func (h *handlers) decisionHandler(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		env := r.PathValue("env")
		var req DecisionRequest
		if err := decodeStrict(w, r, &req, `{"planHash": "..."}`); err != nil {
			fail(w, err)
			return
		}
		if req.PlanHash == "" {
			fail(w, refuse(kindBadRequest, `planHash is required; want {"planHash": "..."}`))
			return
		}
		if msg := req.check(); msg != "" {
			fail(w, refuse(kindBadRequest, "%s", msg))
			return
		}
		who, ok := verifiedPrincipal(w, r, "approver", req.Approver)
		if !ok {
			return
		}
		var (
			p   *approval.Pending
			err error
		)
		if approve {
			p, err = h.b.Approve(r.Context(), env, req.PlanHash, who)
		} else {
			p, err = h.b.Reject(r.Context(), env, req.PlanHash, approval.Why{By: who, Reason: req.Reason})
		}
		switch {
		case err != nil:
			fail(w, err)
		case approve && p.Needed() > 1 && !p.Complete():
			writeJSON(w, http.StatusAccepted, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "pending", Approvers: p.Approvers(), Required: p.Needed(),
				Message: fmt.Sprintf("%s; revision %s waits for more approvals in %s", p.Tally(), gitsource.ShortRevision(p.Revision), env)})
		case approve && p.Release:
			writeJSON(w, http.StatusAccepted, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "approved", Message: fmt.Sprintf("approved by %s; releasing revision %s in %s", who, gitsource.ShortRevision(p.Revision), env)})
		case approve:
			writeJSON(w, http.StatusAccepted, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "approved", Message: fmt.Sprintf("approved by %s; applying revision %s to %s", who, gitsource.ShortRevision(p.Revision), env)})
		case p.Release:
			writeJSON(w, http.StatusOK, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "rejected", Message: fmt.Sprintf("rejected by %s; the deploy of revision %s to %s fails", who, gitsource.ShortRevision(p.Revision), env)})
		default:
			writeJSON(w, http.StatusOK, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "rejected", Message: fmt.Sprintf("rejected by %s; revision %s will not be applied to %s", who, gitsource.ShortRevision(p.Revision), env)})
		}
	}
}

// verifiedPrincipal returns the caller's verified identity, which a request's field (approver) may only
// repeat, as its bare name or as kind:name: a typed-in other name is answered 400 and false.
func verifiedPrincipal(w http.ResponseWriter, r *http.Request, field, typed string) (identity.Principal, bool) {
	caller, _ := auth.FromContext(r.Context())
	if typed != "" && typed != caller.Name && !identity.Parse(typed).Equal(caller.ID()) {
		fail(w, refuse(kindBadRequest, "%s comes from your credentials: you are %s; leave %s out", field, caller.ID(), field))
		return identity.Principal{}, false
	}
	return caller.Identity(), true
}

// verifiedName returns the caller's verified name, which a request's field
// (approver, requestedBy) may only repeat: a typed-in other name is
// answered 400 and false.
func verifiedName(w http.ResponseWriter, r *http.Request, field, typed string) (string, bool) {
	caller, _ := auth.FromContext(r.Context())
	if typed != "" && typed != caller.Name {
		fail(w, refuse(kindBadRequest, "%s comes from your credentials: you are %s; leave %s out", field, caller, field))
		return "", false
	}
	return caller.Name, true
}
