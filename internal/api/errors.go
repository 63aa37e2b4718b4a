package api

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// Codes of the API's error bodies beyond the ones every door shares
// (httpserve.Code*): the kind of error, for programs.
const (
	CodeUnknownEnvironment    = "UnknownEnvironment"
	CodeUnknownHistoryEntry   = "UnknownHistoryEntry"
	CodeUnknownService        = "UnknownService"
	CodeNoLayout              = "NoLayout"
	CodeUnknownRollbackTarget = "UnknownRollbackTarget"
	CodeLockNotFound          = "LockNotFound"
	CodeNotPending            = "NotPending"
	CodeRefused               = "Refused"
	CodeBusy                  = "Busy"
	CodeLocked                = "Locked"
	CodeRollbackNotConfigured = "RollbackNotConfigured"
	CodeNotImplemented        = "NotImplemented"
	CodeDisabled              = "Disabled"
	// CodeLockTypeMismatch: a lock removed, or asked for, by another type
	// than it has (pkg/lock's code, for the lock routes).
	CodeLockTypeMismatch = lockapi.CodeLockTypeMismatch
	// CodeNewerStateSchema: the environment's state was written by a newer
	// release, whose schema this replica may not read: upgrade it.
	CodeNewerStateSchema = "NewerStateSchema"
)

// errorKind is one row of the API's error table: the errors it matches
// and the status and code they are answered with.
type errorKind struct {
	// name says which errors, for tests and people.
	name   string
	match  func(error) bool
	status int
	code   string
}

// errorKinds is the one table of the errors the API's handlers meet,
// first match wins; an error no row matches is 500 Internal. A handler
// never chooses a status: it hands its error to fail.
func errorKinds() []errorKind {
	return []errorKind{
		{"unknown environment", is(approval.ErrUnknownEnvironment), http.StatusNotFound, CodeUnknownEnvironment},
		{"unknown history entry", is(approval.ErrUnknownEntry), http.StatusNotFound, CodeUnknownHistoryEntry},
		{"unknown rollback target", is(ErrUnknownRollbackTarget), http.StatusNotFound, CodeUnknownRollbackTarget},
		{"no such lock", is(lock.ErrNotFound), http.StatusNotFound, CodeLockNotFound},
		{"not pending (the plan changed, or nothing is)", as[*approval.NotPendingError], http.StatusConflict, CodeNotPending},
		{"approval refused by the policy", is(approval.ErrRefused), http.StatusForbidden, CodeRefused},
		{"too many decisions waiting", is(approval.ErrBusy), http.StatusServiceUnavailable, CodeBusy},
		{"locked", as[*lock.LockedError], http.StatusConflict, CodeLocked},
		{"rollback not configured for the environment", is(ErrRollbackNotConfigured), http.StatusConflict, CodeRollbackNotConfigured},
		{"someone else's lock", as[*lock.ForbiddenError], http.StatusForbidden, httpserve.CodeForbidden},
		{"the lock rule refuses", as[*lock.RefusedError], http.StatusForbidden, httpserve.CodeForbidden},
		{"a lock of another type", as[*lock.TypeError], http.StatusConflict, CodeLockTypeMismatch},
		{"an invalid lock request", as[*lock.InvalidError], http.StatusBadRequest, httpserve.CodeBadRequest},
		{"a lock changed concurrently", is(lock.ErrConflict), http.StatusConflict, httpserve.CodeConflict},
		{"the state written by a newer schema", as[*state.SchemaError], http.StatusServiceUnavailable, CodeNewerStateSchema},
		{"body over its cap", as[*http.MaxBytesError], http.StatusRequestEntityTooLarge, httpserve.CodeTooLarge},
		{"credentials refused", as[*auth.Error], 0, ""}, // the status the authenticator names, its code
		{"invalid DORA window", is(dora.ErrWindow), http.StatusBadRequest, CodeInvalidWindow},
		{"bad request", isKind(kindBadRequest), http.StatusBadRequest, httpserve.CodeBadRequest},
		{"a break-glass reason refused", is(approval.ErrBadReason), http.StatusBadRequest, httpserve.CodeBadRequest},
		{"scope missing", isKind(kindForbidden), http.StatusForbidden, httpserve.CodeForbidden},
		{"unknown service", isKind(kindUnknownService), http.StatusNotFound, CodeUnknownService},
		{"no layout yet", isKind(kindNoLayout), http.StatusNotFound, CodeNoLayout},
		{"too many requests", isKind(kindTooMany), http.StatusTooManyRequests, httpserve.CodeTooManyRequests},
		{"not implemented without github.app", isKind(kindNotImplemented), http.StatusNotImplemented, CodeNotImplemented},
		{"the API disabled", isKind(kindDisabled), http.StatusServiceUnavailable, CodeDisabled},
		{"unavailable", isKind(kindUnavailable), http.StatusServiceUnavailable, httpserve.CodeUnavailable},
		{"a server behind it unreachable or overloaded", unreachable, http.StatusServiceUnavailable, httpserve.CodeUnavailable},
	}
}

// StatusOf is the status and code err is answered with (errorKinds).
func StatusOf(err error) (status int, code string) {
	for _, k := range errorKinds() {
		if !k.match(err) {
			continue
		}
		if k.status != 0 {
			return k.status, k.code
		}
		var ae *auth.Error
		if errors.As(err, &ae) && ae.Status >= 400 {
			return ae.Status, httpserve.CodeOf(ae.Status)
		}
	}
	return http.StatusInternalServerError, httpserve.CodeInternal
}

// fail answers err: its status and code (StatusOf), its message, and what
// its kind adds: Retry-After for a wait, WWW-Authenticate for a missing or
// refused token, what is pending now for a plan that is not.
func fail(w http.ResponseWriter, err error) {
	status, code := StatusOf(err)
	if d := retryAfterOf(err); d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Max(1, math.Ceil(d.Seconds())))))
	} else if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="stagehand"`)
	}
	var np *approval.NotPendingError
	if errors.As(err, &np) {
		writeJSON(w, status, map[string]any{"error": err.Error(), "code": code, "pending": np.Pending})
		return
	}
	httpserve.WriteError(w, status, code, err.Error())
}

// retryAfterOf is how long the client should wait before trying err's
// request again; 0 when it is not a matter of waiting.
func retryAfterOf(err error) time.Duration {
	var ae *auth.Error
	var re *requestError
	switch {
	case errors.As(err, &ae):
		return ae.RetryAfter
	case errors.As(err, &re):
		return re.wait
	case errors.Is(err, approval.ErrBusy):
		return time.Second
	case unreachable(err):
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			return time.Duration(s) * time.Second
		}
		return unreachableRetry
	}
	return 0
}

// unreachableRetry is the Retry-After of a request that failed because a
// server behind the API (the state cluster's API server, GitHub) could not
// be reached, when that server named no delay of its own.
const unreachableRetry = 5 * time.Second

// unreachable reports whether err is a server behind the API failing rather
// than the request: the state cluster's API server down, overloaded or
// timing out, or the network to a server failing. The same request may
// succeed later, so it is answered 503 with a Retry-After, not 500.
func unreachable(err error) bool {
	var ne net.Error
	return apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne)
}

// kind is what a handler says about a request it refuses; errorKinds
// turns it into a status.
type kind int

const (
	kindBadRequest kind = iota + 1
	kindForbidden
	kindUnknownService
	kindNoLayout
	kindTooMany
	kindNotImplemented
	kindDisabled
	kindUnavailable
)

// requestError is a refusal of the API's own: its kind, what to tell the
// client, how long to wait for a kindTooMany, and its cause, if any (a body
// over its cap makes a bad request too large).
type requestError struct {
	kind  kind
	msg   string
	wait  time.Duration
	cause error
}

func (e *requestError) Error() string { return e.msg }

func (e *requestError) Unwrap() error { return e.cause }

// refuse returns the refusal of kind, its message formatted.
func refuse(k kind, format string, a ...any) error {
	return &requestError{kind: k, msg: fmt.Sprintf(format, a...)}
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

func isKind(k kind) func(error) bool {
	return func(err error) bool {
		var re *requestError
		return errors.As(err, &re) && re.kind == k
	}
}
