package api

import (
	"encoding/json"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// hostileRequest is one request of the API half of the hostile corpus (the
// manifest half is in pkg/manifest, the webhook half in internal/webhook):
// what a caller with a token, or without one, can send to the HTTP API, and
// the answer it must get, within a time and memory budget.
type hostileRequest struct {
	name, method, path string
	token              string // "" sends the valid token; "-" sends none
	body               string
	wantCode           int
	wantBody           string // a part of the response body that must be there
}

func hostileRequests() []hostileRequest {
	const approve, reject, locks = "/api/v1/environments/prod/approve", "/api/v1/environments/prod/reject", "/api/v1/locks"
	const history, rollback, release = "/api/v1/environments/prod/history/", "/api/v1/environments/prod/rollback", "/api/v1/environments/prod/release"
	big := strings.Repeat("a", 70<<10)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return []hostileRequest{
		// Decisions: bodies.
		{name: "approve without a token", method: "POST", path: approve, token: "-", body: `{"planHash":"sha256:p"}`, wantCode: 401, wantBody: "bearer token"},
		{name: "approve with a wrong token", method: "POST", path: approve, token: "api-test-tokeN", body: `{"planHash":"sha256:p"}`, wantCode: 401, wantBody: "bearer token"},
		{name: "approve with a token prefix", method: "POST", path: approve, token: token[:len(token)-1], body: `{"planHash":"sha256:p"}`, wantCode: 401, wantBody: "bearer token"},
		{name: "empty body", method: "POST", path: approve, wantCode: 400, wantBody: "decoding request body: EOF"},
		{name: "not JSON", method: "POST", path: approve, body: "planHash=sha256:p", wantCode: 400, wantBody: "decoding request body: invalid character"},
		{name: "form-encoded payload", method: "POST", path: approve, body: `payload={"planHash":"sha256:p"}`, wantCode: 400, wantBody: "decoding request body: invalid character"},
		{name: "array", method: "POST", path: approve, body: `[{"planHash":"sha256:p"}]`, wantCode: 400, wantBody: "cannot unmarshal array"},
		{name: "planHash a number", method: "POST", path: approve, body: `{"planHash":1e400}`, wantCode: 400, wantBody: "cannot unmarshal number"},
		{name: "planHash null", method: "POST", path: approve, body: `{"planHash":null}`, wantCode: 400, wantBody: "planHash is required"},
		{name: "unknown field", method: "POST", path: approve, body: `{"planHash":"sha256:p","approve":true}`, wantCode: 400, wantBody: `unknown field \"approve\"`},
		{name: "duplicate planHash keys", method: "POST", path: approve, body: `{"planHash":"sha256:other","planHash":"sha256:x"}`, wantCode: 409, wantBody: "sha256:x"},
		{name: "two objects", method: "POST", path: approve, body: `{"planHash":"sha256:x"}{"planHash":"sha256:p"}`, wantCode: 400, wantBody: "data after the JSON object"},
		{name: "a stray closing brace after the object", method: "POST", path: approve, body: `{"planHash":"sha256:p"}}`, wantCode: 400, wantBody: "data after the JSON object"},
		{name: "a stray closing bracket after the object", method: "POST", path: reject, body: `{"planHash":"sha256:p"} ]`, wantCode: 400, wantBody: "data after the JSON object"},
		{name: "white space after the object", method: "POST", path: approve, body: "{\"planHash\":\"sha256:other\"} \r\n\t", wantCode: 409, wantBody: "sha256:other"},
		{name: "deep nesting", method: "POST", path: approve, body: `{"planHash":` + deep[:60000] + `}`, wantCode: 400, wantBody: "decoding request body"},
		{name: "body over the cap", method: "POST", path: approve, body: `{"planHash":"` + big + `"}`, wantCode: 413, wantBody: "larger than 65536 bytes"},
		{name: "planHash too long", method: "POST", path: approve, body: `{"planHash":"sha256:` + big[:1000] + `"}`, wantCode: 400, wantBody: "planHash is 1007 bytes long; at most 128"},
		{name: "approver too long", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"` + big[:300] + `"}`, wantCode: 400, wantBody: "approver is 300 bytes long"},
		{name: "reason too long", method: "POST", path: reject, body: `{"planHash":"sha256:p","reason":"` + big[:5000] + `"}`, wantCode: 400, wantBody: "reason is 5000 bytes long"},
		{name: "NUL in planHash", method: "POST", path: approve, body: `{"planHash":"sha256:p\u0000"}`, wantCode: 409, wantBody: "pending"},
		{name: "invalid UTF-8", method: "POST", path: approve, body: "{\"planHash\":\"\xff\xfe\"}", wantCode: 409, wantBody: "pending"},
		{name: "stale hash", method: "POST", path: approve, body: `{"planHash":"sha256:old"}`, wantCode: 409, wantBody: `"planHash": "sha256:p"`},
		{name: "unknown environment", method: "POST", path: "/api/v1/environments/prod2/approve", body: `{"planHash":"sha256:p"}`, wantCode: 404, wantBody: "unknown environment"},
		{name: "environment path traversal", method: "POST", path: "/api/v1/environments/..%2Fprod/approve", body: `{"planHash":"sha256:p"}`, wantCode: 404, wantBody: "unknown environment"},
		{name: "GET on approve", method: "GET", path: approve, wantCode: 405},
		// Decisions: who decides comes from the token (token:ops), typed; no spelling of another identity passes.
		{name: "approver as another kind", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"github:ops"}`, wantCode: 400, wantBody: "you are token:ops"},
		{name: "approver kind in another case", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"Token:ops"}`, wantCode: 400, wantBody: "you are token:ops"},
		{name: "approver as Stagehand", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"stagehand:skipConfirmation"}`, wantCode: 400, wantBody: "you are token:ops"},
		{name: "approver as the legacy skipConfirmation", method: "POST", path: reject, body: `{"planHash":"sha256:p","approver":"skipConfirmation"}`, wantCode: 400, wantBody: "you are token:ops"},
		{name: "approver token name in another case", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"token:OPS"}`, wantCode: 400, wantBody: "you are token:ops"},
		{name: "approver with trailing space", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"token:ops "}`, wantCode: 400, wantBody: "you are token:ops"},
		{name: "approver with a NUL", method: "POST", path: approve, body: `{"planHash":"sha256:p","approver":"token:ops\u0000"}`, wantCode: 400, wantBody: "you are token:ops"},
		// Locks: paths and bodies.
		{name: "lock without a token", method: "POST", path: locks, token: "-", body: `{"path":"apps/prod","type":"deploy","author":"a"}`, wantCode: 401, wantBody: "bearer token"},
		{name: "lock body over the cap", method: "POST", path: locks, body: `{"path":"apps/prod","type":"deploy","author":"a","message":"` + big + `"}`, wantCode: 413, wantBody: "larger than 65536 bytes"},
		{name: "lock body not JSON", method: "POST", path: locks, body: "path=apps/prod", wantCode: 400, wantBody: "decoding lock request"},
		{name: "lock body with data after it", method: "POST", path: locks, body: `{"path":"apps/prod","type":"deploy","duration":"1h"}}`, wantCode: 400, wantBody: "decoding lock request: data after the JSON object"},
		{name: "lock path upper case is folded", method: "POST", path: locks, body: `{"path":"Apps/Prod","type":"deploy","author":"a"}`, wantCode: 400, wantBody: "lock apps/prod: expiry is required"},
		{name: "lock path with dot-dot", method: "POST", path: locks, body: `{"path":"apps/../prod","type":"deploy","author":"a"}`, wantCode: 400, wantBody: "apps/../prod"},
		{name: "lock path with NUL", method: "POST", path: locks, body: `{"path":"apps/prod\u0000","type":"deploy","author":"a"}`, wantCode: 400, wantBody: "path"},
		{name: "lock path of unicode", method: "POST", path: locks, body: `{"path":"apps/prоd","type":"deploy","author":"a"}`, wantCode: 400, wantBody: "path"},
		{name: "lock path empty", method: "POST", path: locks, body: `{"path":"","type":"deploy","author":"a"}`, wantCode: 400, wantBody: "path"},
		{name: "lock path very long", method: "POST", path: locks, body: `{"path":"` + strings.Repeat("a/", 20000) + `a","type":"deploy","author":"a"}`, wantCode: 400, wantBody: "path"},
		{name: "lock of an unknown type", method: "POST", path: locks, body: `{"path":"apps/prod","type":"nuke","author":"a"}`, wantCode: 400, wantBody: "nuke"},
		{name: "lock duration negative", method: "POST", path: locks, body: `{"path":"apps/prod","type":"deploy","author":"a","duration":"-5m"}`, wantCode: 400, wantBody: "-5m"},
		{name: "lock duration absurd", method: "POST", path: locks, body: `{"path":"apps/prod","type":"deploy","author":"a","duration":"9999999999h"}`, wantCode: 400, wantBody: "9999999999h"},
		// The author is the verified caller; claiming to be the reconciler changes nothing.
		{name: "lock as the reconciler", method: "POST", path: locks, body: `{"path":"apps/claimed","type":"deploy","author":"` + lock.ReservedAuthor + `","duration":"1h"}`, wantCode: 201, wantBody: `"author":"token:ops"`},
		{name: "get lock path traversal", method: "GET", path: "/api/v1/locks/apps/%2E%2E/prod", wantCode: 400, wantBody: "path"},
		{name: "check path encoded slash", method: "GET", path: "/api/v1/check/apps%2Fprod%00", wantCode: 400, wantBody: "path"},
		{name: "unlock of nothing", method: "DELETE", path: "/api/v1/locks/apps/prod?type=deploy", wantCode: 404, wantBody: "no lock"},
		{name: "unlock with an unknown type", method: "DELETE", path: "/api/v1/locks/apps/prod?type=nuke", wantCode: 400, wantBody: "nuke"},
		{name: "unlock of the lock taken as the reconciler", method: "DELETE", path: "/api/v1/locks/apps/claimed?type=deploy", wantCode: 200, wantBody: `"author":"token:ops"`},
		// History: ids out of range, in other notations, enormous.
		{name: "history id zero", method: "GET", path: history + "0", wantCode: 400, wantBody: `history entry id \"0\": want a positive integer, as the history list shows`},
		{name: "history id negative", method: "GET", path: history + "-1", wantCode: 400, wantBody: `history entry id \"-1\": want a positive integer`},
		{name: "history id past int64", method: "GET", path: history + "9223372036854775808", wantCode: 400, wantBody: `history entry id \"9223372036854775808\": want a positive integer`},
		{name: "history id largest int64", method: "GET", path: history + "9223372036854775807", wantCode: 404, wantBody: "unknown history entry 9223372036854775807 in environment prod: it holds entries 1 to 2"},
		{name: "history id after the newest", method: "GET", path: history + "3", wantCode: 404, wantBody: "unknown history entry 3 in environment prod: it holds entries 1 to 2"},
		{name: "history id in hex", method: "GET", path: history + "0x1", wantCode: 400, wantBody: `history entry id \"0x1\"`},
		{name: "history id with spaces", method: "GET", path: history + "%201", wantCode: 400, wantBody: `history entry id \" 1\"`},
		{name: "history id of 60 KiB", method: "GET", path: history + strings.Repeat("9", 60<<10), wantCode: 400, wantBody: `history entry id \"` + strings.Repeat("9", 64) + `…\"`},
		{name: "history of an unknown environment", method: "GET", path: "/api/v1/environments/prod2/history/1", wantCode: 404, wantBody: `unknown environment \"prod2\"`},
		// Services: the name is compared, never a pattern.
		{name: "service name a regular expression", method: "GET", path: "/api/v1/services/.%2A", wantCode: 404, wantBody: `no service \".*\" in any environment`},
		{name: "service name with NUL", method: "GET", path: "/api/v1/services/api%00", wantCode: 404, wantBody: `no service \"api\\x00\" in any environment`},
		{name: "service name of 254 bytes", method: "GET", path: "/api/v1/services/" + big[:254], wantCode: 400, wantBody: "service name is 254 bytes long; at most 253 are accepted"},
		{name: "service name of 60 KiB", method: "GET", path: "/api/v1/services/" + big[:60<<10], wantCode: 400, wantBody: "service name is 61440 bytes long; at most 253 are accepted"},
		// Rollback and release: bodies.
		{name: "rollback without a token", method: "POST", path: rollback, token: "-", body: `{"to":"previous","reason":"x"}`, wantCode: 401, wantBody: "bearer token"},
		{name: "rollback body over the cap", method: "POST", path: rollback, body: `{"to":"previous","reason":"` + big + `"}`, wantCode: 413, wantBody: "larger than 65536 bytes"},
		{name: "rollback to too long", method: "POST", path: rollback, body: `{"to":"` + big[:65] + `","reason":"x"}`, wantCode: 400, wantBody: "to is 65 bytes long; at most 64 are accepted"},
		{name: "rollback reason too long", method: "POST", path: rollback, body: `{"to":"previous","reason":"` + big[:5000] + `"}`, wantCode: 400, wantBody: "reason is 5000 bytes long"},
		{name: "rollback to a number", method: "POST", path: rollback, body: `{"to":1,"reason":"x"}`, wantCode: 400, wantBody: "cannot unmarshal number into Go struct field RollbackRequest.to of type string"},
		{name: "rollback to blank", method: "POST", path: rollback, body: `{"to":" \t","reason":"x"}`, wantCode: 400, wantBody: "to is required"},
		{name: "rollback as someone else", method: "POST", path: rollback, body: `{"to":"previous","reason":"x","requestedBy":"alice"}`, wantCode: 400, wantBody: "requestedBy comes from your credentials: you are ops (token)"},
		{name: "rollback with an unknown field", method: "POST", path: rollback, body: `{"to":"previous","reason":"x","now":true,"force":true}`, wantCode: 400, wantBody: `unknown field \"force\"`},
		// The pin, and a skipConfirmation environment's history, name the caller's typed identity (set by the
		// server, never read from the body): a body naming one is refused whole, spelled any way.
		{name: "rollback naming its caller", method: "POST", path: rollback, body: `{"to":"previous","reason":"x","now":true,"caller":"github:admin"}`, wantCode: 400, wantBody: `unknown field \"caller\"`},
		{name: "rollback naming its Caller", method: "POST", path: rollback, body: `{"to":"previous","reason":"x","now":true,"Caller":{"Kind":"github","Name":"admin"}}`, wantCode: 400, wantBody: `unknown field \"Caller\"`},
		{name: "rollback with a stray brace after it", method: "POST", path: rollback, body: `{"to":"previous","reason":"x"}} {}`, wantCode: 400, wantBody: "data after the JSON object"},
		{name: "rollback deep nesting", method: "POST", path: rollback, body: `{"to":` + deep[:60000] + `}`, wantCode: 400, wantBody: "decoding request body"},
		{name: "rollback of an unknown history id", method: "POST", path: rollback, body: `{"to":"999","reason":"x"}`, wantCode: 404, wantBody: "unknown history entry 999"},
		{name: "release body not JSON", method: "POST", path: release, body: "reason=x", wantCode: 400, wantBody: "decoding request body: invalid character"},
		{name: "release reason too long", method: "POST", path: release, body: `{"reason":"` + big[:5000] + `"}`, wantCode: 400, wantBody: "reason is 5000 bytes long"},
		{name: "release of no hold", method: "POST", path: release, body: `{"reason":"x"}`, wantCode: 404, wantBody: "prod has no hold to release"},
	}
}

// TestHostileRequests sends every request of the API corpus and checks the
// status, a part of the body, and the time and memory the server spent.
func TestHostileRequests(t *testing.T) {
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{pending: &approval.Pending{Revision: "abcdef0123456789", PlanHash: "sha256:p"}, locks: svc}
	rb := &rollbacks{}
	srv := newServer(t, b, withOps(t), WithRollback(rb))
	for _, tc := range hostileRequests() {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token
			switch tok {
			case "":
				tok = token
			case "-":
				tok = ""
			}
			before := allocated()
			start := time.Now()
			code, body := call(t, srv, tc.method, tc.path, tok, tc.body)
			took, alloc := time.Since(start), allocated()-before
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, code, clip(body), tc.wantCode, tc.wantBody)
			}
			// Every route, the lock routes included, answers an error the same way.
			var e struct{ Error, Code string }
			if code >= 400 && (json.Unmarshal([]byte(body), &e) != nil || e.Error == "" || e.Code == "") {
				t.Errorf("%s %s: %d %q, want the error body {\"error\", \"code\"}", tc.method, tc.path, code, clip(body))
			}
			if took > 2*time.Second {
				t.Errorf("took %s, want under 2s", took)
			}
			// The bodies are at most 70 KiB; a request may cost a few MiB
			// with the test client, never more.
			if alloc > 8<<20 {
				t.Errorf("allocated %d bytes, want under 8 MiB", alloc)
			}
		})
	}
	if len(b.decided) != 0 {
		t.Errorf("decisions taken by hostile requests: %v", b.decided)
	}
	if len(rb.asked) != 0 {
		t.Errorf("rollbacks asked by hostile requests: %+v", rb.asked)
	}
	if ls, err := svc.List(t.Context(), ""); err != nil || len(ls) != 0 {
		t.Errorf("locks left by hostile requests: %v, %v", ls, err)
	}
	if n := len(hostileRequests()); n < 65 {
		t.Errorf("the API corpus has %d cases, want at least 65", n)
	}
}

func allocated() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
