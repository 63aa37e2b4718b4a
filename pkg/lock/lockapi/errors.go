package lockapi

import (
	"errors"
	"net/http"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Codes of the lock API's error answers: the kind of error, for programs,
// named as every Stagehand door names its errors (the reconciler's API
// answers the lock routes with its own table, which gives these errors the
// same statuses and codes).
const (
	CodeBadRequest       = "BadRequest"
	CodeUnauthorized     = "Unauthorized"
	CodeForbidden        = "Forbidden"
	CodeLockNotFound     = "LockNotFound"
	CodeLockTypeMismatch = "LockTypeMismatch"
	CodeConflict         = "Conflict"
	CodeTooLarge         = "TooLarge"
	CodeLocked           = "Locked"
	CodeInternal         = "Internal"
)

// errBadToken is a request without the handler's bearer token.
var errBadToken = errors.New("missing or wrong bearer token")

// errorKind is one row of the lock API's error table.
type errorKind struct {
	match  func(error) bool
	status int
	code   string
}

// errorKinds is the lock API's one table of errors, first match wins; an
// error no row matches is 500 Internal.
func errorKinds() []errorKind {
	return []errorKind{
		{as[*lock.ForbiddenError], http.StatusForbidden, CodeForbidden},
		{as[*lock.RefusedError], http.StatusForbidden, CodeForbidden},
		{as[*lock.LockedError], http.StatusLocked, CodeLocked},
		{as[*lock.TypeError], http.StatusConflict, CodeLockTypeMismatch},
		{as[*http.MaxBytesError], http.StatusRequestEntityTooLarge, CodeTooLarge},
		{as[*lock.InvalidError], http.StatusBadRequest, CodeBadRequest},
		{is(lock.ErrNotFound), http.StatusNotFound, CodeLockNotFound},
		{is(lock.ErrConflict), http.StatusConflict, CodeConflict},
		{is(errBadToken), http.StatusUnauthorized, CodeUnauthorized},
	}
}

// StatusOf is the status and code the lock API answers err with.
func StatusOf(err error) (status int, code string) {
	for _, k := range errorKinds() {
		if k.match(err) {
			return k.status, k.code
		}
	}
	return http.StatusInternalServerError, CodeInternal
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// writeError answers err with its status and code (StatusOf): a 423 with
// the locks (a CheckResponse), any other error {"error", "code"}.
func (h *Handler) writeError(w http.ResponseWriter, err error) {
	status, code := StatusOf(err)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="stagehand"`)
	}
	writeJSON(w, status, errorResponse{Error: err.Error(), Code: code})
}

// bodyError is a request body refused for what its cause says, with a
// message of its own.
type bodyError struct {
	msg   string
	cause error
}

func (e *bodyError) Error() string { return e.msg }
func (e *bodyError) Unwrap() error { return e.cause }

// invalid is a request the handler refuses as malformed (400).
func invalid(err error) error { return &lock.InvalidError{Err: err} }
