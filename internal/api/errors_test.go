package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/dora"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// TestErrorTable: every error the API's handlers meet, wrapped as the
// daemon, the rollbacker or the lock service wrap it, is answered with its
// status, code and message, and the headers and keys its kind adds; every
// row of the table is held by a case.
func TestErrorTable(t *testing.T) {
	pending := &approval.Pending{Revision: "abc", PlanHash: "sha256:now", Plan: json.RawMessage(`{"changes":[]}`)}
	for _, tc := range []struct {
		row    string // the errorKinds row it is answered by
		err    error
		status int
		code   string
		header map[string]string
		// pending, when set, is the pending key the body must hold.
		pending **approval.Pending
	}{
		{row: "unknown environment", err: fmt.Errorf("%w %q; configured: [prod]", approval.ErrUnknownEnvironment, "nope"), status: 404, code: "UnknownEnvironment"},
		{row: "unknown history entry", err: fmt.Errorf("reading entry 7: %w", approval.ErrUnknownEntry), status: 404, code: "UnknownHistoryEntry"},
		{row: "unknown rollback target", err: fmt.Errorf("%w: no revision abc", ErrUnknownRollbackTarget), status: 404, code: "UnknownRollbackTarget"},
		{row: "no such lock", err: fmt.Errorf("releasing the hold: %w", lock.ErrNotFound), status: 404, code: "LockNotFound"},
		{row: "not pending (the plan changed, or nothing is)", err: fmt.Errorf("approving: %w", &approval.NotPendingError{Environment: "prod", PlanHash: "sha256:old", Pending: pending}),
			status: 409, code: "NotPending", pending: &pending},
		{row: "not pending (the plan changed, or nothing is)", err: &approval.NotPendingError{Environment: "prod", PlanHash: "sha256:old"},
			status: 409, code: "NotPending", pending: new(*approval.Pending)},
		{row: "approval refused by the policy", err: fmt.Errorf("%w: four-eyes: alice wrote the change", approval.ErrRefused), status: 403, code: "Refused"},
		{row: "too many decisions waiting", err: fmt.Errorf("deciding: %w", approval.ErrBusy), status: 503, code: "Busy", header: map[string]string{"Retry-After": "1"}},
		{row: "locked", err: fmt.Errorf("placing the hold: %w", &lock.LockedError{Path: "apps/prod"}), status: 409, code: "Locked"},
		{row: "rollback not configured for the environment", err: fmt.Errorf("%w: prod has no lockPath", ErrRollbackNotConfigured), status: 409, code: "RollbackNotConfigured"},
		{row: "someone else's lock", err: &lock.ForbiddenError{Caller: lock.Caller{Name: "token:ci"}, Locks: []lock.Lock{{Path: "apps/prod", Author: "github:alice"}}}, status: 403, code: "Forbidden"},
		{row: "the lock rule refuses", err: fmt.Errorf("locking: %w", &lock.RefusedError{Reason: "github:mallory may not lock"}), status: 403, code: "Forbidden"},
		{row: "a lock of another type", err: &lock.TypeError{Lock: lock.Lock{Path: "apps/prod", Type: lock.Automation}, Want: lock.Incident}, status: 409, code: "LockTypeMismatch"},
		{row: "an invalid lock request", err: &lock.InvalidError{Err: errors.New("query parameter type is required")}, status: 400, code: "BadRequest"},
		{row: "a lock changed concurrently", err: fmt.Errorf("writing lock apps/prod: %w", lock.ErrConflict), status: 409, code: "Conflict"},
		{row: "the state written by a newer schema", err: fmt.Errorf("reading prod: %w", &state.SchemaError{ConfigMap: "stagehand/stagehand-state-prod", Found: 9, OldestReader: 9, Build: 8}),
			status: 503, code: "NewerStateSchema"},
		{row: "body over its cap", err: fmt.Errorf("reading: %w", &http.MaxBytesError{Limit: 10}), status: 413, code: "TooLarge"},
		{row: "body over its cap", err: &requestError{kind: kindBadRequest, msg: "decoding request body: larger than 10 bytes", cause: &http.MaxBytesError{Limit: 10}}, status: 413, code: "TooLarge"},
		{row: "credentials refused", err: &auth.Error{Status: 401, Message: "unknown bearer token"}, status: 401, code: "Unauthorized",
			header: map[string]string{"WWW-Authenticate": `Bearer realm="stagehand"`}},
		{row: "credentials refused", err: &auth.Error{Status: 429, Message: "too many new tokens", RetryAfter: 1500 * time.Millisecond}, status: 429, code: "TooManyRequests",
			header: map[string]string{"Retry-After": "2"}},
		{row: "invalid DORA window", err: fmt.Errorf("reading the window: %w %q", dora.ErrWindow, "400d"), status: 400, code: "InvalidWindow"},
		{row: "bad request", err: refuse(kindBadRequest, "planHash is required"), status: 400, code: "BadRequest"},
		{row: "a break-glass reason refused", err: fmt.Errorf("breaking the glass: %w: empty", approval.ErrBadReason), status: 400, code: "BadRequest"},
		{row: "scope missing", err: refuse(kindForbidden, "needs scope read"), status: 403, code: "Forbidden"},
		{row: "unknown service", err: refuse(kindUnknownService, "no service %q", "x"), status: 404, code: "UnknownService"},
		{row: "no layout yet", err: refuse(kindNoLayout, "no layout"), status: 404, code: "NoLayout"},
		{row: "too many requests", err: &requestError{kind: kindTooMany, msg: "too many requests", wait: 300 * time.Millisecond}, status: 429, code: "TooManyRequests",
			header: map[string]string{"Retry-After": "1"}},
		{row: "not implemented without github.app", err: refuse(kindNotImplemented, "rollback needs github.app"), status: 501, code: "NotImplemented"},
		{row: "the API disabled", err: refuse(kindDisabled, "the API is disabled"), status: 503, code: "Disabled"},
		{row: "unavailable", err: refuse(kindUnavailable, "not ready"), status: 503, code: "Unavailable"},
		{row: "a server behind it unreachable or overloaded", err: fmt.Errorf("reading state of environment prod: %w",
			&url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/namespaces/stagehand/configmaps/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}),
			status: 503, code: "Unavailable", header: map[string]string{"Retry-After": "5"}},
		{row: "a server behind it unreachable or overloaded", err: fmt.Errorf("reading state of environment prod: %w", apierrors.NewServiceUnavailable("etcd is down")),
			status: 503, code: "Unavailable", header: map[string]string{"Retry-After": "5"}},
		{row: "a server behind it unreachable or overloaded", err: fmt.Errorf("writing state of environment prod: %w", apierrors.NewTooManyRequests("slow down", 7)),
			status: 503, code: "Unavailable", header: map[string]string{"Retry-After": "7"}},
		{row: "a server behind it unreachable or overloaded", err: fmt.Errorf("writing state of environment prod: %w", apierrors.NewTimeoutError("etcd", 0)),
			status: 503, code: "Unavailable", header: map[string]string{"Retry-After": "5"}},
		{row: "", err: fmt.Errorf("reading state of environment prod: %w", apierrors.NewInternalError(errors.New("boom"))), status: 500, code: "Internal"},
		{row: "", err: errors.New("reading state of environment prod: the server is currently unable to handle the request"), status: 500, code: "Internal"},
	} {
		t.Run(fmt.Sprintf("%s: %s", tc.code, tc.err), func(t *testing.T) {
			rec := httptest.NewRecorder()
			fail(rec, tc.err)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			for k, v := range tc.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			var got struct {
				Error, Code string
				Pending     *approval.Pending
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if got.Error != tc.err.Error() || got.Code != tc.code {
				t.Errorf("body %s, want error %q and code %q", rec.Body, tc.err.Error(), tc.code)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &keys); err != nil {
				t.Fatal(err)
			}
			_, hasPending := keys["pending"]
			if hasPending != (tc.pending != nil) {
				t.Errorf("body %s: pending key %v, want %v", rec.Body, hasPending, tc.pending != nil)
			}
			if tc.pending != nil {
				// What is pending now, named by its revision and plan hash (its plan is re-indented).
				opt := cmp.Comparer(func(a, b json.RawMessage) bool { return true })
				if diff := cmp.Diff(*tc.pending, got.Pending, opt); diff != "" {
					t.Errorf("pending (-want +got):\n%s", diff)
				}
			}
		})
	}
	t.Run("every row held", func(t *testing.T) {
		// The cases above name the row that answers them; each row has one.
		src, err := os.ReadFile("errors_test.go")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range errorKinds() {
			if !strings.Contains(string(src), `row: "`+k.name+`"`) {
				t.Errorf("no case of TestErrorTable is answered by the row %q", k.name)
			}
		}
	})
}

// TestCodesDocumented: every code of the error table, and pkg/lock's
// Locked (the lock routes' 423), has its row in docs/reference/api.md's
// table of codes, with its status.
func TestCodesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference/api.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		status int
		code   string
	}
	want := []row{{http.StatusLocked, lockapi.CodeLocked}}
	for _, k := range errorKinds() {
		if k.code != "" {
			want = append(want, row{k.status, k.code})
		}
	}
	for _, r := range want {
		if line := fmt.Sprintf("| `%d` | `%s` |", r.status, r.code); !strings.Contains(string(b), line) {
			t.Errorf("docs/reference/api.md's table of codes has no row %q", line)
		}
	}
}

// TestLockErrorsAgree: the lock routes answer pkg/lock's errors through
// this table (lockapi.WithErrorWriter), and pkg/lock's own table, which
// answers them where the handler is served alone, gives each the same
// status and code; a lock refusing a request is 423 with the locks on the
// lock routes (the handler's answer), 409 Locked elsewhere (a rollback's
// hold).
func TestLockErrorsAgree(t *testing.T) {
	for _, err := range []error{
		&lock.ForbiddenError{Caller: lock.Caller{Name: "token:ci"}},
		&lock.RefusedError{Reason: "refused"},
		&lock.TypeError{Lock: lock.Lock{Path: "apps/prod", Type: lock.Automation}, Want: lock.Incident},
		&lock.InvalidError{Err: errors.New("bad path")},
		fmt.Errorf("getting: %w", lock.ErrNotFound),
		fmt.Errorf("writing: %w", lock.ErrConflict),
		fmt.Errorf("reading: %w", &http.MaxBytesError{Limit: 10}),
		errors.New("the storage failed"),
	} {
		ls, lc := lockapi.StatusOf(err)
		as, ac := StatusOf(err)
		if ls != as || lc != ac {
			t.Errorf("%v: pkg/lock answers %d %s, the API %d %s", err, ls, lc, as, ac)
		}
	}
}

// TestNoHandlerMapsErrors: outside errors.go (and client.go, the client's
// side), no file of the API names an error status (http.Status 4xx or
// 5xx), writes an error body itself, or asks errors.Is/As about an error
// the table maps: each hands its error to fail.
func TestNoHandlerMapsErrors(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fine := map[string]bool{"StatusOK": true, "StatusCreated": true, "StatusAccepted": true, "StatusNoContent": true,
		"StatusSeeOther": true, "StatusFound": true, "StatusMovedPermanently": true, "StatusNotModified": true}
	// What decodeStrict may ask about: whether decoding ended, or read past the body's cap (for its message).
	askable := map[string]bool{"io.EOF": true, "tooBig": true, "&tooBig": true}
	fset := gotoken.NewFileSet()
	var bad []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || path == "errors.go" || path == "client.go" {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && strings.HasPrefix(n.Sel.Name, "Status") && !fine[n.Sel.Name] {
					bad = append(bad, fmt.Sprintf("%s: http.%s", fset.Position(n.Pos()), n.Sel.Name))
				}
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "httpserve" && (n.Sel.Name == "WriteError" || n.Sel.Name == "CodeOf") {
					bad = append(bad, fmt.Sprintf("%s: httpserve.%s", fset.Position(n.Pos()), n.Sel.Name))
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) != 2 {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "errors" && (sel.Sel.Name == "Is" || sel.Sel.Name == "As") {
					if target := exprString(n.Args[1]); !askable[target] {
						bad = append(bad, fmt.Sprintf("%s: errors.%s(…, %s)", fset.Position(n.Pos()), sel.Sel.Name, target))
					}
				}
			}
			return true
		})
	}
	if len(bad) > 0 {
		t.Errorf("handlers mapping errors to statuses themselves instead of through fail (errors.go):\n%s", strings.Join(bad, "\n"))
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.UnaryExpr:
		return e.Op.String() + exprString(e.X)
	}
	return fmt.Sprintf("%T", e)
}
