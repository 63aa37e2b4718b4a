package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

const secret = "webhook-secret-for-tests"

// payload loads a testdata payload and applies edits (top-level key → value,
// "repository.<key>" for repository fields).
func payload(t *testing.T, name string, edits map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range edits {
		if rk, ok := strings.CutPrefix(k, "repository."); ok {
			m["repository"].(map[string]any)[rk] = v
			continue
		}
		m[k] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type delivery struct {
	event, id string
	body      []byte
	signature string // "" → signed with secret; "-" → no header
	method    string
}

func send(t *testing.T, url string, d delivery) (int, string) {
	t.Helper()
	if d.method == "" {
		d.method = http.MethodPost
	}
	req, err := http.NewRequest(d.method, url, bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", d.event)
	req.Header.Set("X-GitHub-Delivery", d.id)
	switch d.signature {
	case "":
		req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, d.body))
	case "-":
	default:
		req.Header.Set("X-Hub-Signature-256", d.signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// recorder is a handler that remembers the events it saw.
type recorder struct {
	mu     sync.Mutex
	events []webhook.Event
	err    error
}

func (r *recorder) handle(_ context.Context, e webhook.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return r.err
}

func (r *recorder) deliveries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, e := range r.events {
		ids = append(ids, e.Type+"/"+e.Delivery)
	}
	return ids
}

// recordedServer serves a Receiver whose handler for event records what it
// sees, and returns the recorder and the server's URL.
func recordedServer(t *testing.T, event string, opts ...webhook.Option) (*recorder, string) {
	t.Helper()
	recv, err := webhook.New(secret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	recv.Handle(event, rec.handle)
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func TestNewRequiresSecret(t *testing.T) {
	for _, s := range []string{"", "  \n"} {
		if _, err := webhook.New(s); err == nil {
			t.Errorf("New(%q) succeeded", s)
		}
	}
}

func TestReceiver(t *testing.T) {
	body := payload(t, "push.json", nil)
	tests := []struct {
		name     string
		d        delivery
		wantCode int
		wantSeen []string
	}{
		{name: "valid", d: delivery{event: "push", id: "1", body: body}, wantCode: 200, wantSeen: []string{"push/1"}},
		{name: "missing signature", d: delivery{event: "push", id: "1", body: body, signature: "-"}, wantCode: 401},
		{name: "signed with another secret", d: delivery{event: "push", id: "1", body: body, signature: githubtest.Sign("other", body)}, wantCode: 401},
		{name: "body changed after signing", d: delivery{event: "push", id: "1", body: append(bytes.Clone(body), ' '), signature: githubtest.Sign(secret, body)}, wantCode: 401},
		{name: "sha1 scheme", d: delivery{event: "push", id: "1", body: body, signature: "sha1=" + strings.Repeat("0", 40)}, wantCode: 401},
		{name: "not hex", d: delivery{event: "push", id: "1", body: body, signature: "sha256=zz"}, wantCode: 401},
		{name: "GET", d: delivery{event: "push", id: "1", body: nil, method: http.MethodGet}, wantCode: 405},
		{name: "no event header", d: delivery{event: "", id: "1", body: body}, wantCode: 400},
		{name: "no delivery header", d: delivery{event: "push", id: "", body: body}, wantCode: 400},
		{name: "event without handler", d: delivery{event: "deployment", id: "1", body: body}, wantCode: 200},
		{name: "event whose shape the payload lacks", d: delivery{event: "status", id: "1", body: body}, wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, url := recordedServer(t, "push")
			code, msg := send(t, url, tt.d)
			if code != tt.wantCode {
				t.Errorf("status = %d (%s), want %d", code, strings.TrimSpace(msg), tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantSeen, rec.deliveries()); diff != "" {
				t.Errorf("handled deliveries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReceiverPassesRawPayload(t *testing.T) {
	rec, url := recordedServer(t, "check_run")
	body := []byte(`{"action": "requested_action",  "odd spacing": true,
		"check_run": {"id": 1, "name": "stagehand/prod", "head_sha": "6113728f27ae82c7b1a177c8d03f9e96e0adf246", "status": "completed"},
		"requested_action": {"identifier": "approve"}, "repository": {"full_name": "acme/manifests"}}`)
	if code, _ := send(t, url, delivery{event: "check_run", id: "x", body: body}); code != 200 {
		t.Fatalf("status = %d", code)
	}
	want := []webhook.Event{{Type: "check_run", Delivery: "x", Payload: body}}
	if diff := cmp.Diff(want, rec.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestReceiverFormContentType: a hook configured with content type "form"
// is refused with 415 even when its signature is valid; only JSON bodies are
// decoded.
func TestReceiverFormContentType(t *testing.T) {
	rec, srvURL := recordedServer(t, "push")
	js := `{"ref":"refs/heads/main"}`
	body := []byte(url.Values{"payload": {js}}.Encode())
	req, _ := http.NewRequest(http.MethodPost, srvURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "form")
	req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("status = %d, want 415", resp.StatusCode)
	}
	if got := rec.deliveries(); len(got) != 0 {
		t.Errorf("handled %v, want nothing", got)
	}
}

func TestReceiverDedupe(t *testing.T) {
	rec, url := recordedServer(t, "push", webhook.WithDedupeSize(2))
	body := payload(t, "push.json", nil)
	for _, id := range []string{"a", "a", "b", "a", "c", "b", "a"} {
		if code, msg := send(t, url, delivery{event: "push", id: id, body: body}); code != 200 {
			t.Fatalf("delivery %s: status %d (%s)", id, code, msg)
		}
	}
	// a; a is a duplicate; b; a is a duplicate (and now newest); c evicts b;
	// b is new again and evicts a; a is new again.
	want := []string{"push/a", "push/b", "push/c", "push/b", "push/a"}
	if diff := cmp.Diff(want, rec.deliveries()); diff != "" {
		t.Errorf("handled deliveries (-want +got):\n%s", diff)
	}
}

func TestReceiverHandlerErrorAllowsRedelivery(t *testing.T) {
	var reported []string
	rec, url := recordedServer(t, "push", webhook.WithErrorHandler(func(e webhook.Event, err error) {
		reported = append(reported, e.Delivery+": "+err.Error())
	}))
	rec.err = errors.New("boom")
	body := payload(t, "push.json", nil)
	if code, msg := send(t, url, delivery{event: "push", id: "r", body: body}); code != 500 || strings.Contains(msg, "boom") {
		t.Errorf("failing handler: status %d (%s), want 500 without details", code, msg)
	}
	rec.err = nil
	if code, _ := send(t, url, delivery{event: "push", id: "r", body: body}); code != 200 {
		t.Errorf("redelivery: status %d, want 200", code)
	}
	if diff := cmp.Diff([]string{"push/r", "push/r"}, rec.deliveries()); diff != "" {
		t.Errorf("handled deliveries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r: boom"}, reported); diff != "" {
		t.Errorf("reported errors (-want +got):\n%s", diff)
	}
}

func TestReceiverBodyCap(t *testing.T) {
	rec, url := recordedServer(t, "push", webhook.WithMaxBodyBytes(1024))
	big := []byte(`{"pad":"` + strings.Repeat("x", 2048) + `"}`)
	if code, _ := send(t, url, delivery{event: "push", id: "big", body: big}); code != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", code)
	}

	// Without a Content-Length (chunked), the cap still holds.
	pr, pw := io.Pipe()
	go func() {
		pw.Write(big)
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, url, pr)
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Delivery", "chunked")
	req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, big))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked: status = %d, want 413", resp.StatusCode)
	}
	if got := rec.deliveries(); len(got) != 0 {
		t.Errorf("handled %v, want nothing", got)
	}
}
