package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// hostileDelivery is one request of the webhook half of the hostile corpus
// (the manifest half is in pkg/manifest): what an attacker, or a GitHub hook
// set up wrong, can send, and the exact answer the receiver must give with
// the time and memory it may spend on it.
type hostileDelivery struct {
	name  string
	event string
	// file is a body under testdata (or testdata/hostile); size, when set,
	// generates a body of that many bytes instead, sent with its length or
	// chunked.
	file        string
	size        int64
	chunked     bool
	contentType string // "" sends application/json; "-" sends none
	signature   string // "" signs with the secret; "-" sends none
	wantCode    int
	wantBody    string // the exact response body
	handled     bool   // the handler must have run
	maxTime     time.Duration
	maxAlloc    int64 // bytes allocated in the process while the request ran
}

const (
	fastHook  = 2 * time.Second
	smallHook = 1 << 20
)

func hostileDeliveries() []hostileDelivery {
	const shapeHint = "; is the event header right?\n"
	return []hostileDelivery{
		// Real payloads pass.
		{name: "real push", event: "push", file: "push.json", wantCode: 200, wantBody: "ok\n", handled: true},
		{name: "real check_run", event: "check_run", file: "check_run.created.json", wantCode: 200, wantBody: "ok\n", handled: true},
		{name: "real check_suite", event: "check_suite", file: "check_suite.requested.json", wantCode: 200, wantBody: "ok\n", handled: true},
		{name: "real pull_request", event: "pull_request", file: "pull_request.opened.json", wantCode: 200, wantBody: "ok\n", handled: true},
		{name: "real status", event: "status", file: "status.json", wantCode: 200, wantBody: "ok\n", handled: true},
		{name: "charset parameter", event: "push", file: "push.json", contentType: "application/json; charset=utf-8", wantCode: 200, wantBody: "ok\n", handled: true},
		{name: "unknown event with an object", event: "deployment", file: "hostile/empty-object.json", wantCode: 200, wantBody: "ok\n", handled: true},

		// Oversized bodies: refused from Content-Length before reading, or once the cap is read.
		{name: "25 MiB announced", event: "push", size: 25 << 20, signature: "sha256=00", wantCode: 413, wantBody: "payload too large\n",
			maxTime: fastHook, maxAlloc: smallHook},
		{name: "25 MiB chunked", event: "push", size: 25 << 20, chunked: true, signature: "sha256=00", wantCode: 413, wantBody: "Request Entity Too Large\n",
			maxTime: 10 * time.Second, maxAlloc: 24 << 20},
		{name: "one byte over the cap announced", event: "push", size: 5<<20 + 1, wantCode: 413, wantBody: "payload too large\n",
			maxTime: fastHook, maxAlloc: smallHook},
		{name: "the cap exactly, bad signature", event: "push", size: 5 << 20, signature: "sha256=00", wantCode: 401, wantBody: "missing or invalid X-Hub-Signature-256\n",
			maxTime: 10 * time.Second, maxAlloc: 8 << 20},

		// Content types.
		{name: "form-encoded with a valid signature", event: "push", file: "hostile/form.txt", contentType: "application/x-www-form-urlencoded",
			wantCode: 415, wantBody: "Content-Type must be application/json (set the hook's content type to application/json)\n"},
		{name: "no Content-Type", event: "push", file: "push.json", contentType: "-",
			wantCode: 415, wantBody: "Content-Type must be application/json (set the hook's content type to application/json)\n"},
		{name: "text/plain", event: "push", file: "push.json", contentType: "text/plain",
			wantCode: 415, wantBody: "Content-Type must be application/json (set the hook's content type to application/json)\n"},
		{name: "unparsable Content-Type", event: "push", file: "push.json", contentType: "application/json; =",
			wantCode: 415, wantBody: "Content-Type must be application/json (set the hook's content type to application/json)\n"},

		// Signatures.
		{name: "bad signature", event: "push", file: "push.json", signature: "sha256=" + strings.Repeat("0", 64), wantCode: 401, wantBody: "missing or invalid X-Hub-Signature-256\n"},
		{name: "no signature", event: "push", file: "push.json", signature: "-", wantCode: 401, wantBody: "missing or invalid X-Hub-Signature-256\n"},
		{name: "sha1 signature", event: "push", file: "push.json", signature: "sha1=" + strings.Repeat("0", 40), wantCode: 401, wantBody: "missing or invalid X-Hub-Signature-256\n"},
		{name: "signature not hex", event: "push", file: "push.json", signature: "sha256=zz", wantCode: 401, wantBody: "missing or invalid X-Hub-Signature-256\n"},
		{name: "no event header", event: "", file: "push.json", wantCode: 400, wantBody: "X-GitHub-Event and X-GitHub-Delivery are required\n"},

		// Payloads that are not the shape their event says.
		{name: "push payload as check_run", event: "check_run", file: "push.json", wantCode: 400,
			wantBody: `X-GitHub-Event "check_run": the payload lacks action, check_run` + shapeHint},
		{name: "check_run payload as push", event: "push", file: "check_run.created.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload lacks ref, after` + shapeHint},
		{name: "status payload as pull_request", event: "pull_request", file: "status.json", wantCode: 400,
			wantBody: `X-GitHub-Event "pull_request": the payload lacks action, number, pull_request` + shapeHint},
		{name: "check_run without head_sha", event: "check_run", file: "hostile/check_run-without-head_sha.json", wantCode: 400,
			wantBody: `X-GitHub-Event "check_run": the payload lacks check_run.head_sha` + shapeHint},
		{name: "check_run id as a string", event: "check_run", file: "hostile/check_run-id-as-string.json", wantCode: 400,
			wantBody: `X-GitHub-Event "check_run": the payload's check_run.id is a JSON string, which is the wrong type` + "\n"},
		{name: "a click without requested_action", event: "check_run", file: "hostile/check_run-requested_action-without-requested_action.json", wantCode: 400,
			wantBody: `X-GitHub-Event "check_run": the payload lacks requested_action.identifier` + shapeHint},
		{name: "check_run null", event: "check_run", file: "hostile/check_run-null.json", wantCode: 400,
			wantBody: `X-GitHub-Event "check_run": the payload lacks check_run` + shapeHint},
		{name: "pull_request without pull_request", event: "pull_request", file: "hostile/pull_request-without-pull_request.json", wantCode: 400,
			wantBody: `X-GitHub-Event "pull_request": the payload lacks pull_request` + shapeHint},
		{name: "pull_request without head", event: "pull_request", file: "hostile/pull_request-without-head.json", wantCode: 400,
			wantBody: `X-GitHub-Event "pull_request": the payload lacks pull_request.head.ref, pull_request.head.sha` + shapeHint},
		{name: "status without sha", event: "status", file: "hostile/status-without-sha.json", wantCode: 400,
			wantBody: `X-GitHub-Event "status": the payload lacks sha` + shapeHint},
		{name: "push without repository", event: "push", file: "hostile/push-without-repository.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload lacks repository.full_name` + shapeHint},
		{name: "push with a null ref", event: "push", file: "hostile/push-ref-null.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload lacks ref` + shapeHint},
		{name: "push without after", event: "push", file: "hostile/push-without-after.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload lacks after` + shapeHint},
		{name: "push repository as a string", event: "push", file: "hostile/push-repository-as-string.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload's repository is a JSON string, which is the wrong type` + "\n"},
		{name: "ping without zen", event: "ping", file: "hostile/empty-object.json", wantCode: 400,
			wantBody: `X-GitHub-Event "ping": the payload lacks zen` + shapeHint},
		{name: "an array", event: "push", file: "hostile/array.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload is not a JSON object` + "\n"},
		{name: "not JSON", event: "push", file: "hostile/not-json.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload is not a JSON object` + "\n"},
		{name: "empty body", event: "deployment", file: "hostile/empty.json", wantCode: 400,
			wantBody: `X-GitHub-Event "deployment": the payload is not a JSON object` + "\n"},
		{name: "truncated JSON", event: "push", file: "hostile/truncated.json", wantCode: 400,
			wantBody: `X-GitHub-Event "push": the payload is not valid JSON: unexpected end of JSON input` + "\n"},
		{name: "nested 20,000 deep", event: "deployment", file: "hostile/nested.json", wantCode: 400,
			wantBody: `X-GitHub-Event "deployment": the payload is not valid JSON: invalid character '[' exceeded max depth` + "\n"},
	}
}

// TestHostileDeliveries runs the webhook corpus against a receiver with the
// default options.
func TestHostileDeliveries(t *testing.T) {
	cases := hostileDeliveries()
	if len(cases) < 30 {
		t.Fatalf("only %d hostile deliveries", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.maxTime == 0 {
				tc.maxTime, tc.maxAlloc = fastHook, smallHook
			}
			rec, url := recordedServer(t, tc.event)
			req := hostileRequest(t, url, tc)
			sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
			metrics.Read(sample)
			before := sample[0].Value.Uint64()
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			metrics.Read(sample)
			if alloc := int64(sample[0].Value.Uint64() - before); alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes, over the budget of %d", alloc, tc.maxAlloc)
			}
			if took > tc.maxTime {
				t.Errorf("took %v, over the budget of %v", took, tc.maxTime)
			}
			want := tc.wantBody
			if tc.wantCode >= 400 { // the error body every door answers with, holding the message
				rec := httptest.NewRecorder()
				httpserve.WriteError(rec, tc.wantCode, httpserve.CodeOf(tc.wantCode), strings.TrimSuffix(tc.wantBody, "\n"))
				want = rec.Body.String()
			}
			if resp.StatusCode != tc.wantCode || string(body) != want {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.wantCode, want)
			}
			if got := len(rec.deliveries()) > 0; got != tc.handled {
				t.Errorf("handler ran: %v, want %v", got, tc.handled)
			}
		})
	}
}

func hostileRequest(t *testing.T, url string, tc hostileDelivery) *http.Request {
	t.Helper()
	var body io.Reader
	var raw []byte
	if tc.size > 0 {
		body = io.LimitReader(spaces{}, tc.size)
	} else {
		var err error
		if raw, err = os.ReadFile("testdata/" + tc.file); err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case tc.chunked:
		req.ContentLength = -1
	case tc.size > 0:
		req.ContentLength = tc.size
	}
	switch tc.contentType {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", tc.contentType)
	}
	if tc.event != "" {
		req.Header.Set("X-GitHub-Event", tc.event)
	}
	req.Header.Set("X-GitHub-Delivery", "hostile-1")
	switch tc.signature {
	case "":
		if tc.size > 0 {
			req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, bytes.Repeat([]byte{' '}, int(tc.size))))
		} else {
			req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, raw))
		}
	case "-":
	default:
		req.Header.Set("X-Hub-Signature-256", tc.signature)
	}
	return req
}

// spaces is an endless body of JSON whitespace, generated as it is sent.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestConcurrencyBound: with every slot held by a delivery still being
// handled, another delivery waits for the queue wait and then gets 503 with
// Retry-After; once a slot frees, deliveries are served again.
func TestConcurrencyBound(t *testing.T) {
	recv, err := webhook.New(secret, webhook.WithMaxConcurrent(2), webhook.WithQueueWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	recv.Handle("push", func(_ context.Context, e webhook.Event) error {
		if strings.HasPrefix(e.Delivery, "held") {
			entered <- struct{}{}
			<-release
		}
		return nil
	})
	srv := httptest.NewServer(recv)
	defer srv.Close()
	body, err := os.ReadFile("testdata/push.json")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 2)
	for i := range 2 {
		go func() {
			code, _, _ := post(t, srv.URL, fmt.Sprintf("held-%d", i), body)
			done <- code
		}()
		<-entered
	}
	code, msg, retry := post(t, srv.URL, "third", body)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, `"error": "too many webhook deliveries at once; retry later"`) || retry != "1" {
		t.Errorf("with every slot busy: %d %q Retry-After %q, want 503 with Retry-After 1", code, msg, retry)
	}
	close(release)
	for range 2 {
		if c := <-done; c != 200 {
			t.Errorf("a held delivery got %d, want 200", c)
		}
	}
	if code, msg, _ := post(t, srv.URL, "fourth", body); code != 200 {
		t.Errorf("after the slots freed: %d %q, want 200", code, msg)
	}
}

func post(t *testing.T, url, delivery string, body []byte) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Retry-After")
}

// TestTricklersHoldNoSlot: senders that announce bodies and trickle them
// hold only the bytes they sent, not the handling slots: with more
// tricklers than slots, a real delivery is still handled at once.
func TestTricklersHoldNoSlot(t *testing.T) {
	rec, url := recordedServer(t, "push", webhook.WithReadTimeout(3*time.Second), webhook.WithMaxConcurrent(2),
		webhook.WithQueueWait(50*time.Millisecond))
	body, err := os.ReadFile("testdata/push.json")
	if err != nil {
		t.Fatal(err)
	}
	var writers []*io.PipeWriter
	done := make(chan struct{}, 4)
	for i := range 4 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, pr)
		req.ContentLength = 5 << 20
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("trickle-%d", i))
		req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, body))
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
		go func() { _, _ = pw.Write(body[:10]) }()
	}
	time.Sleep(200 * time.Millisecond) // the tricklers are connected and reading
	if code, msg, _ := post(t, url, "real", body); code != 200 {
		t.Errorf("a real delivery among %d tricklers got %d %q, want 200", len(writers), code, msg)
	}
	for _, pw := range writers {
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}
	for range writers {
		<-done
	}
	if diff := cmp.Diff([]string{"push/real"}, rec.deliveries()); diff != "" {
		t.Errorf("handled deliveries (-want +got):\n%s", diff)
	}
}

// TestSlowSenderCut: a sender that announces a body and trickles it is cut
// off at the read timeout, freeing its slot, instead of holding it for as
// long as it likes.
func TestSlowSenderCut(t *testing.T) {
	rec, url := recordedServer(t, "push", webhook.WithReadTimeout(200*time.Millisecond), webhook.WithMaxConcurrent(1))
	body, err := os.ReadFile("testdata/push.json")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, pr)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "slow")
	req.Header.Set("X-Hub-Signature-256", githubtest.Sign(secret, body))
	go func() { _, _ = pw.Write(body[:10]) }() // and nothing more
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("slow sender got %d, want 400", resp.StatusCode)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the slow sender held its slot for %v", took)
	}
	if code, msg, _ := post(t, url, "next", body); code != 200 {
		t.Errorf("the next delivery got %d %q, want 200", code, msg)
	}
	if diff := cmp.Diff([]string{"push/next"}, rec.deliveries()); diff != "" {
		t.Errorf("handled deliveries (-want +got):\n%s", diff)
	}
}
