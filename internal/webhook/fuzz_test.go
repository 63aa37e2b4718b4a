package webhook

import (
	"github.com/stagehand-gitops/stagehand/internal/githubtest"

	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FuzzReceiver sends arbitrary bodies under arbitrary event names and
// content types, signed or not, through the receiver. It must answer with
// one of its documented statuses and never panic, and a handler must only
// ever see a signed JSON body of the shape its event requires, unchanged.
func FuzzReceiver(f *testing.F) {
	for _, name := range []string{"push.json", "check_run.created.json", "check_suite.requested.json", "pull_request.opened.json", "status.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		event := name[:bytes.IndexAny([]byte(name), ".")]
		f.Add(event, "application/json", b, true)
		f.Add("push", "application/json", b, true)
	}
	f.Add("ping", "application/json", []byte(`{"zen": "Keep it logically awesome."}`), true)
	f.Add("push", "application/x-www-form-urlencoded", []byte(`payload=%7B%7D`), true)
	f.Add("check_run", "application/json", []byte(`{"action": "created", "check_run": {"id": "1"}}`), true)
	f.Add("deployment", "application/json; charset=utf-8", []byte(`[]`), false)
	const secret = "fuzz-secret"
	r, err := New(secret, WithMaxBodyBytes(64<<10))
	if err != nil {
		f.Fatal(err)
	}
	var seen []Event
	for _, ev := range []string{"push", "check_run", "check_suite", "pull_request", "status", "ping", "deployment"} {
		r.Handle(ev, func(_ context.Context, e Event) error { seen = append(seen, e); return nil })
	}
	n := 0
	f.Fuzz(func(t *testing.T, event, contentType string, body []byte, signed bool) {
		n++
		seen = seen[:0]
		req := httptest.NewRequest(http.MethodPost, "/webhook/github", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", "fuzz-"+strconv.Itoa(n))
		if signed {
			req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, body))
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		switch w.Code {
		case 200, 400, 413, 415:
		case 401:
			if signed && len(body) <= 64<<10 {
				t.Fatalf("a signed body got 401: %s", w.Body)
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if len(seen) == 0 {
			return
		}
		e := seen[0]
		if w.Code != 200 || !signed || e.Type != event || !bytes.Equal(e.Payload, body) {
			t.Fatalf("handler saw %+v after %d (signed %v)", e, w.Code, signed)
		}
		if err := checkShape(event, e.Payload); err != nil {
			t.Fatalf("handler saw a payload of the wrong shape: %v", err)
		}
	})
}

// FuzzShape decodes arbitrary payloads as arbitrary events: checkShape
// must never panic, and what it accepts must hold every field the event's
// handlers read, checked here independently on the generic JSON value.
func FuzzShape(f *testing.F) {
	for _, name := range []string{"push.json", "check_run.created.json", "check_suite.requested.json", "pull_request.opened.json", "status.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name[:bytes.IndexByte([]byte(name), '.')], b)
	}
	f.Add("ping", []byte(`{"zen": "z"}`))
	f.Add("push", []byte(`{"ref": "refs/heads/main", "after": "1", "repository": {"full_name": 5}}`))
	f.Add("pull_request", []byte(`{"action": "opened", "number": 1.5, "pull_request": {"head": {"ref": "a", "sha": "b"}, "base": {"ref": "main"}}, "repository": {"full_name": "a/b"}}`))
	required := map[string][]string{
		"push":         {"ref", "after", "repository.full_name"},
		"check_run":    {"action", "check_run.id", "check_run.name", "check_run.head_sha", "check_run.status", "repository.full_name"},
		"check_suite":  {"action", "check_suite.id", "check_suite.head_sha", "repository.full_name"},
		"pull_request": {"action", "number", "pull_request.head.ref", "pull_request.head.sha", "pull_request.base.ref", "repository.full_name"},
		"status":       {"sha", "state", "context", "repository.full_name"},
		"ping":         {"zen"},
	}
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		if checkShape(event, payload) != nil {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(payload, &v); err != nil {
			t.Fatalf("accepted a payload that is not a JSON object: %v", err)
		}
		for _, field := range required[event] {
			if !present(v, strings.Split(field, ".")) {
				t.Fatalf("accepted a %s event whose %s is missing", event, field)
			}
		}
	})
}

// present reports whether the path of keys leads to a non-null value,
// matching keys as encoding/json (and go-github) do: case-insensitively.
func present(v any, path []string) bool {
	if len(path) == 0 {
		return v != nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, child := range m {
		if strings.EqualFold(k, path[0]) && present(child, path[1:]) {
			return true
		}
	}
	return false
}
