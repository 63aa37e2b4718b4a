package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Rollbacker opens an environment's rollback pull request and places its
// hold, and ends a hold (POST .../rollback and .../release). internal/cli
// joins prbot (the pull request, through the GitHub App) and the lock
// service (the hold) into one.
type Rollbacker interface {
	// Rollback returns an error wrapping approval.ErrUnknownEnvironment for
	// an environment not in the configuration, ErrUnknownRollbackTarget for
	// a history id or revision that does not exist.
	Rollback(ctx context.Context, env string, req RollbackRequest) (*RollbackResponse, error)
	// Release returns an error wrapping lock.ErrNotFound when the
	// environment has no hold.
	Release(ctx context.Context, env string, req ReleaseRequest) (*ReleaseResponse, error)
}

// ErrUnknownRollbackTarget is wrapped by a Rollbacker's error for a
// history id or revision that does not exist (404).
var ErrUnknownRollbackTarget = errors.New("unknown rollback target")

// ErrRollbackNotConfigured is wrapped by a Rollbacker's error when the
// environment's configuration cannot hold a rollback (no lockPath for its
// hold): 409, the request is fine but the server's reconciler.yaml is not.
var ErrRollbackNotConfigured = errors.New("rollback not configured")

// WithRollback serves POST /api/v1/environments/{env}/rollback and
// .../release through r; without it both answer 501.
func WithRollback(r Rollbacker) Option {
	return func(o *options) error { o.rollback = r; return nil }
}

// RollbackRequest is the body of POST .../rollback.
type RollbackRequest struct {
	// To is a history entry id, a revision (7 to 40 hex digits) or
	// "previous". Required.
	To string `json:"to"`
	// Reason is why; it titles the pull request. Required.
	Reason string `json:"reason"`
	// RequestedBy is who asks, for the pull request and the hold: the
	// caller's verified name (sending another is refused).
	RequestedBy string `json:"requestedBy,omitempty"`
	// Now is incident mode: the rolled-back versions are also pinned in the
	// reconciler, planned at once and approved as RequestedBy (left pending
	// for an approver when that is refused), and kept until the pull
	// request merges.
	Now bool `json:"now,omitempty"`
	// Caller is the verified caller, typed, with the person it acts for (set by the server, never read
	// from the body): an incident rollback's pin, and the history of a skipConfirmation environment's
	// apply of it, name its ID; with Now, the pinned plan is approved as Caller.
	Caller identity.Principal `json:"-"`
}

// RollbackResponse is the answer to a rollback.
type RollbackResponse struct {
	Environment string `json:"environment"`
	// Revision is the commit whose versions the environment goes back to.
	Revision string `json:"revision"`
	// Action is opened, updated, unchanged or none (nothing differs: no
	// pull request, no hold).
	Action string `json:"action"`
	PR     int    `json:"pr,omitempty"`
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	// Services lists what goes back: "service container now → then".
	Services []string `json:"services"`
	Skipped  []string `json:"skipped,omitempty"`
	// Hold is the hold placed on the environment (nil with action none).
	Hold *lock.Lock `json:"hold,omitempty"`
	// Pin is what an incident rollback (now) pinned; PlanHash and Approval
	// say what became of its plan: "approved" (applying), "pending" (waiting
	// for an approver: Message says why) or "applied" (skipConfirmation).
	Pin      *approval.Pin `json:"pin,omitempty"`
	PlanHash string        `json:"planHash,omitempty"`
	Approval string        `json:"approval,omitempty"`
	Message  string        `json:"message"`
}

// ReleaseRequest is the body of POST .../release.
type ReleaseRequest struct {
	Reason      string `json:"reason,omitempty"`
	RequestedBy string `json:"requestedBy,omitempty"`
}

// ReleaseResponse is the answer to a release.
type ReleaseResponse struct {
	Environment string    `json:"environment"`
	Released    lock.Lock `json:"released"`
	Message     string    `json:"message"`
}

// Longest accepted fields of a RollbackRequest.
const maxRollbackTo = 64

// decodeStrict decodes one JSON object of at most maxBody bytes into v,
// refusing unknown fields and trailing data; its error says why, for fail
// (a body over the cap is too large, anything else a bad request).
func decodeStrict(w http.ResponseWriter, r *http.Request, v any, want string) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Anything but white space after the object is refused: More alone would take a stray "}" or "]" for the end.
		if _, err = dec.Token(); errors.Is(err, io.EOF) {
			return nil
		}
		if tooBig := new(http.MaxBytesError); !errors.As(err, &tooBig) {
			err = errors.New("data after the JSON object")
		}
	}
	msg := err.Error()
	if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
		msg = fmt.Sprintf("larger than %d bytes", tooBig.Limit)
	}
	return &requestError{kind: kindBadRequest, msg: fmt.Sprintf("decoding request body: %s; want %s", msg, want), cause: err}
}

// tooLong returns why one of the fields is longer than allowed, or "".
func tooLong(fields ...field) string {
	for _, f := range fields {
		if len(f.value) > f.max {
			return fmt.Sprintf("%s is %d bytes long; at most %d are accepted", f.name, len(f.value), f.max)
		}
	}
	return ""
}

// field is one request field and its longest accepted length.
type field struct {
	name, value string
	max         int
}

func (h *handlers) rollback(w http.ResponseWriter, r *http.Request) {
	const want = `{"to": "previous | <history id> | <revision>", "reason": "..."}`
	if h.o.rollback == nil {
		fail(w, refuse(kindNotImplemented, "rollback needs github.app in reconciler.yaml: the rollback pull request is opened through the GitHub App"))
		return
	}
	var req RollbackRequest
	if err := decodeStrict(w, r, &req, want); err != nil {
		fail(w, err)
		return
	}
	if msg := tooLong(field{"to", req.To, maxRollbackTo}, field{"reason", req.Reason, maxReason}, field{"requestedBy", req.RequestedBy, maxApprover}); msg != "" {
		fail(w, refuse(kindBadRequest, "%s", msg))
		return
	}
	switch {
	case strings.TrimSpace(req.To) == "":
		fail(w, refuse(kindBadRequest, "to is required; want %s", want))
		return
	case strings.TrimSpace(req.Reason) == "":
		fail(w, refuse(kindBadRequest, "reason is required: it titles the rollback pull request; want %s", want))
		return
	}
	who, ok := verifiedName(w, r, "requestedBy", req.RequestedBy)
	if !ok {
		return
	}
	req.RequestedBy = who
	if caller, ok := auth.FromContext(r.Context()); ok {
		req.Caller = caller.Identity()
	}
	res, err := h.o.rollback.Rollback(r.Context(), r.PathValue("env"), req)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *handlers) release(w http.ResponseWriter, r *http.Request) {
	const want = `{"reason": "...", "requestedBy": "..."}`
	if h.o.rollback == nil {
		fail(w, refuse(kindNotImplemented, "release needs github.app in reconciler.yaml (holds are placed by rollbacks); `reconciler unlock <lockPath>/hold --type hold` removes one"))
		return
	}
	var req ReleaseRequest
	if err := decodeStrict(w, r, &req, want); err != nil {
		fail(w, err)
		return
	}
	if msg := tooLong(field{"reason", req.Reason, maxReason}, field{"requestedBy", req.RequestedBy, maxApprover}); msg != "" {
		fail(w, refuse(kindBadRequest, "%s", msg))
		return
	}
	who, ok := verifiedName(w, r, "requestedBy", req.RequestedBy)
	if !ok {
		return
	}
	req.RequestedBy = who
	res, err := h.o.rollback.Release(r.Context(), r.PathValue("env"), req)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
