package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// receiver is a local sink endpoint: check decodes each request strictly
// (failing the test on a bad one) and returns what it names the message;
// answer gives the status of the n-th request (from 1).
type receiver struct {
	t      *testing.T
	check  func(t *testing.T, r *http.Request, body []byte) string
	answer func(n int, w http.ResponseWriter) int
	mu     sync.Mutex
	n      int
	got    []string
	times  []time.Time
	arrive chan string
}

func newReceiver(t *testing.T, check func(*testing.T, *http.Request, []byte) string) (*receiver, *httptest.Server) {
	rc := &receiver{t: t, check: check, arrive: make(chan string, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading body: %v", err)
		}
		rc.mu.Lock()
		rc.n++
		n := rc.n
		rc.times = append(rc.times, time.Now())
		rc.mu.Unlock()
		code := http.StatusOK
		if rc.answer != nil {
			code = rc.answer(n, w)
		}
		if code/100 == 2 {
			name := rc.check(t, r, body)
			rc.mu.Lock()
			rc.got = append(rc.got, name)
			rc.mu.Unlock()
			rc.arrive <- name
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return rc, srv
}

// list is every message accepted so far.
func (rc *receiver) list() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// wait returns the next n messages the receiver accepted.
func (rc *receiver) wait(n int) []string {
	rc.t.Helper()
	var out []string
	for range n {
		select {
		case m := <-rc.arrive:
			out = append(out, m)
		case <-time.After(20 * time.Second):
			rc.t.Fatalf("waited for %d messages, got %v", n, out)
		}
	}
	return out
}

func strict(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
}

type blockText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackBody struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type     string      `json:"type"`
		Text     *blockText  `json:"text"`
		Fields   []blockText `json:"fields"`
		Elements []blockText `json:"elements"`
	} `json:"blocks"`
}

// checkSlack checks Block Kit's structure and limits, and names the message
// by its header.
func checkSlack(t *testing.T, r *http.Request, body []byte) string {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Slack Content-Type %q", ct)
	}
	var m slackBody
	strict(t, body, &m)
	if m.Text == "" || len(m.Blocks) == 0 || len(m.Blocks) > 50 {
		t.Fatalf("Slack message: text %q and %d blocks (want 1 to 50)", m.Text, len(m.Blocks))
	}
	textOK := func(x blockText, max int, types ...string) {
		if !slices.Contains(types, x.Type) || x.Text == "" || len([]rune(x.Text)) > max {
			t.Errorf("Slack text object %+v: want type %v, 1 to %d characters", x, types, max)
		}
	}
	for i, b := range m.Blocks {
		switch b.Type {
		case "header":
			if b.Text == nil || b.Fields != nil || b.Elements != nil {
				t.Fatalf("block %d: header with text only: %+v", i, b)
			}
			textOK(*b.Text, 150, "plain_text")
		case "section":
			if (b.Text == nil) == (b.Fields == nil) || len(b.Fields) > 10 || b.Elements != nil {
				t.Fatalf("block %d: section with text or up to 10 fields: %+v", i, b)
			}
			if b.Text != nil {
				textOK(*b.Text, 3000, "mrkdwn", "plain_text")
			}
			for _, f := range b.Fields {
				textOK(f, 2000, "mrkdwn", "plain_text")
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 || b.Text != nil || b.Fields != nil {
				t.Fatalf("block %d: context with 1 to 10 elements: %+v", i, b)
			}
			for _, e := range b.Elements {
				textOK(e, 3000, "mrkdwn", "plain_text")
			}
		default:
			t.Fatalf("block %d: unexpected type %q", i, b.Type)
		}
	}
	if m.Blocks[0].Type != "header" {
		t.Errorf("first block %q, want header", m.Blocks[0].Type)
	}
	return m.Blocks[0].Text.Text
}

type teamsBody struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string `json:"contentType"`
		Content     struct {
			Schema  string `json:"$schema"`
			Type    string `json:"type"`
			Version string `json:"version"`
			Body    []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Weight string `json:"weight"`
				Size   string `json:"size"`
				Wrap   bool   `json:"wrap"`
				Facts  []struct {
					Title string `json:"title"`
					Value string `json:"value"`
				} `json:"facts"`
			} `json:"body"`
		} `json:"content"`
	} `json:"attachments"`
}

// checkTeams checks the Workflows message and its Adaptive Card, and names
// the message by its first TextBlock.
func checkTeams(t *testing.T, _ *http.Request, body []byte) string {
	var m teamsBody
	strict(t, body, &m)
	if m.Type != "message" || len(m.Attachments) != 1 {
		t.Fatalf("Teams message type %q with %d attachments", m.Type, len(m.Attachments))
	}
	a := m.Attachments[0]
	c := a.Content
	if a.ContentType != "application/vnd.microsoft.card.adaptive" || c.Type != "AdaptiveCard" || c.Version != "1.4" ||
		c.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" || len(c.Body) == 0 {
		t.Fatalf("Teams attachment %+v is not an Adaptive Card 1.4", a)
	}
	for i, b := range c.Body {
		switch b.Type {
		case "TextBlock":
			if b.Text == "" || b.Facts != nil {
				t.Errorf("body[%d]: TextBlock without text or with facts", i)
			}
		case "FactSet":
			if len(b.Facts) == 0 || b.Text != "" {
				t.Errorf("body[%d]: FactSet without facts or with text", i)
			}
			for _, f := range b.Facts {
				if f.Title == "" || f.Value == "" {
					t.Errorf("body[%d]: fact %+v", i, f)
				}
			}
		default:
			t.Errorf("body[%d]: unexpected element %q", i, b.Type)
		}
	}
	return c.Body[0].Text
}

// checkEvent checks a CloudEvent's required attributes and our data, and
// names it by its type.
func checkEvent(t *testing.T, e *event.Event) string {
	t.Helper()
	if err := e.Validate(); err != nil {
		t.Fatalf("invalid CloudEvent: %v", err)
	}
	name := strings.TrimPrefix(e.Type(), TypePrefix)
	if name == LockTaken || name == LockReleased {
		return checkLockEvent(t, e)
	}
	if e.SpecVersion() != "1.0" || e.ID() == "" || !strings.HasPrefix(e.Type(), TypePrefix) ||
		e.Source() != "stagehand/"+e.Subject() || e.Time().IsZero() || e.DataContentType() != "application/json" {
		t.Fatalf("CloudEvent attributes: %s", e)
	}
	if !slices.Contains(Events(), name) {
		return checkSequenceEvent(t, e)
	}
	var d Data
	strict(t, e.Data(), &d)
	if d.Environment != e.Subject() || d.Revision == "" || d.PlanHash == "" {
		t.Errorf("event data %+v", d)
	}
	return e.Type()
}

func checkWebhook(key []byte) func(*testing.T, *http.Request, []byte) string {
	return func(t *testing.T, r *http.Request, body []byte) string {
		if ct := r.Header.Get("Content-Type"); ct != "application/cloudevents+json" {
			t.Errorf("webhook Content-Type %q", ct)
		}
		if got, want := r.Header.Get(SignatureHeader), Sign(key, body); !hmac.Equal([]byte(got), []byte(want)) {
			t.Errorf("signature %q, want %q", got, want)
		}
		var raw map[string]any
		strict(t, body, &raw)
		for _, k := range []string{"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "data"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("structured CloudEvent without %q: %s", k, body)
			}
		}
		e := event.New()
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("structured CloudEvent: %v", err)
		}
		return checkEvent(t, &e)
	}
}

func checkBinary(t *testing.T, r *http.Request, body []byte) string {
	if r.Header.Get("Ce-Specversion") != "1.0" || r.Header.Get("Ce-Id") == "" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("binary CloudEvent headers %v", r.Header)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	e, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		t.Fatalf("binary CloudEvent: %v", err)
	}
	return checkEvent(t, e)
}

func proposal(env string, changes int) approval.Proposal {
	p := &reconcile.Plan{Environment: env, Revision: "0123456789abcdef0123", PlanHash: "sha256:" + env}
	for i := range changes {
		p.Changes = append(p.Changes, reconcile.Change{Service: fmt.Sprintf("svc-%d", i), Target: "eu", Namespace: "apps",
			Kind: "Deployment", Name: fmt.Sprintf("svc-%d", i), Container: "app", From: "reg/app:1", To: "reg/app:2 <&>"})
	}
	return approval.Proposal{Environment: env, Revision: p.Revision, Plan: p}
}

func fast(t *testing.T) []Option {
	return []Option{WithRetries(3, time.Millisecond, 5*time.Millisecond, 5*time.Second),
		OnError(func(sink string, err error) { t.Logf("sink %s: %v", sink, err) })}
}

func newNotifier(t *testing.T, sinks []Sink, opts ...Option) *Notifier {
	t.Helper()
	n, err := New(sinks, append(fast(t), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return n
}

func TestEveryKindEveryEvent(t *testing.T) {
	key := []byte("hmac key")
	slack, slackSrv := newReceiver(t, checkSlack)
	teams, teamsSrv := newReceiver(t, checkTeams)
	hook, hookSrv := newReceiver(t, checkWebhook(key))
	bus, busSrv := newReceiver(t, checkBinary)
	n := newNotifier(t, []Sink{{Name: "slack", Kind: KindSlack, URL: slackSrv.URL}, {Name: "teams", Kind: KindTeams, URL: teamsSrv.URL},
		{Name: "hook", Kind: KindWebhook, URL: hookSrv.URL, Secret: key}, {Name: "bus", Kind: KindCloudEvents, URL: busSrv.URL}})
	ctx := context.Background()
	p := proposal("prod", 3)
	now := time.Now()
	for range 2 { // proposed again: announced once
		if dec, err := n.Propose(ctx, p); err != nil || dec != (approval.Decision{}) {
			t.Fatalf("Propose = %+v, %v; want no decision", dec, err)
		}
	}
	if err := n.Superseded(ctx, p, "fedcba"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{approval.ResultRejected, approval.ResultSucceeded, approval.ResultFailed, approval.ResultInterrupted} {
		if r == approval.ResultSucceeded {
			// The apply is under way: approved now, once, and not again at Completed.
			for range 2 {
				if err := n.Started(ctx, p, "alice"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := n.Completed(ctx, p, approval.Outcome{Result: r, Approver: "alice", Message: "why", Started: now, Finished: now}); err != nil {
			t.Fatal(err)
		}
	}
	types := []string{"plan.pending", "plan.superseded", "plan.rejected", "plan.approved", "deploy.succeeded",
		"plan.approved", "deploy.failed", "plan.approved", "deploy.interrupted"}
	var want []string
	for _, ty := range types {
		want = append(want, TypePrefix+ty)
	}
	for name, rc := range map[string]*receiver{"webhook": hook, "cloudevents": bus} {
		if diff := cmp.Diff(want, rc.wait(len(want))); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", name, diff)
		}
	}
	titles := []string{"Plan waiting for approval in prod", "Plan superseded in prod", "Plan rejected in prod", "Plan approved in prod",
		"Deployed to prod", "Plan approved in prod", "Deploy failed in prod", "Plan approved in prod", "Deploy interrupted in prod"}
	for name, rc := range map[string]*receiver{"slack": slack, "teams": teams} {
		if diff := cmp.Diff(titles, rc.wait(len(titles))); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", name, diff)
		}
	}
	if err := n.Close(ctx); err != nil { // the last answer is counted once its sender is idle
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(n.total.WithLabelValues("hook", "sent")); got != float64(len(want)) {
		t.Errorf("sent = %v, want %d", got, len(want))
	}
}

func TestEventData(t *testing.T) {
	key := []byte("k")
	var mu sync.Mutex
	var got []Data
	_, srv := newReceiver(t, func(t *testing.T, r *http.Request, body []byte) string {
		e := event.New()
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		var d Data
		strict(t, e.Data(), &d)
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
		return checkWebhook(key)(t, r, body)
	})
	n := newNotifier(t, []Sink{{Name: "hook", Kind: KindWebhook, URL: srv.URL, Secret: key}})
	p := proposal("prod", 1)
	if err := n.Superseded(context.Background(), p, "fedcba"); err != nil {
		t.Fatal(err)
	}
	if err := n.Completed(context.Background(), p, approval.Outcome{Result: approval.ResultFailed, Approver: "bob", Message: "rollout timed out"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := []Change{{Service: "svc-0", Target: "eu", Workload: "apps/Deployment/svc-0", Container: "app", From: "reg/app:1", To: "reg/app:2 <&>"}}
	base := Data{Environment: "prod", Revision: "0123456789abcdef0123", PlanHash: "sha256:prod", Changes: c}
	sup, appr, failed := base, base, base
	sup.SupersededBy = "fedcba"
	appr.Approver = "bob"
	failed.Approver, failed.Result, failed.Message = "bob", "failed", "rollout timed out"
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]Data{sup, appr, failed}, got); diff != "" {
		t.Errorf("event data (-want +got):\n%s", diff)
	}
}

func TestSlackLimits(t *testing.T) {
	slack, srv := newReceiver(t, func(t *testing.T, r *http.Request, body []byte) string {
		checkSlack(t, r, body)
		return string(body)
	})
	n := newNotifier(t, []Sink{{Name: "slack", Kind: KindSlack, URL: srv.URL}})
	p := proposal(strings.Repeat("e", 200), 400) // a header past 150 characters, more changes than 50 blocks hold
	if _, err := n.Propose(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	body := slack.wait(1)[0]
	var m slackBody
	strict(t, []byte(body), &m)
	shown, text := 0, ""
	for _, b := range m.Blocks {
		if b.Text != nil {
			text += b.Text.Text + "\n"
		}
		for _, f := range b.Fields {
			text += f.Text + "\n"
		}
		if b.Type == "section" {
			shown += len(b.Fields) / 2
		}
	}
	if len(m.Blocks) != 50 || !strings.Contains(text, fmt.Sprintf("… %d more", 400-shown)) || !strings.Contains(text, "`reg/app:2 &lt;&amp;&gt;`") ||
		len([]rune(m.Blocks[0].Text.Text)) != 150 {
		t.Errorf("%d blocks showing %d changes; want 50 blocks, the rest counted as \"… N more\", mrkdwn escaped", len(m.Blocks), shown)
	}
}

func TestFilters(t *testing.T) {
	hook, srv := newReceiver(t, checkWebhook([]byte("k")))
	all, allSrv := newReceiver(t, checkBinary)
	n := newNotifier(t, []Sink{
		{Name: "prod-failures", Kind: KindWebhook, URL: srv.URL, Secret: []byte("k"), Environments: []string{"prod"}, Events: []string{DeployFailed, PlanPending}},
		{Name: "all", Kind: KindCloudEvents, URL: allSrv.URL},
	})
	ctx := context.Background()
	for _, env := range []string{"staging", "prod"} {
		p := proposal(env, 1)
		if _, err := n.Propose(ctx, p); err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{approval.ResultSucceeded, approval.ResultFailed} {
			if err := n.Completed(ctx, p, approval.Outcome{Result: r, Approver: "a"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	all.wait(10)
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{TypePrefix + PlanPending, TypePrefix + DeployFailed}
	if diff := cmp.Diff(want, hook.list()); diff != "" {
		t.Errorf("prod failures sink (-want +got):\n%s", diff)
	}
}

func TestSlowSinkDoesNotBlock(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	slow, srv := newReceiver(t, checkBinary)
	slow.answer = func(int, http.ResponseWriter) int {
		entered <- struct{}{}
		<-release
		return http.StatusAccepted
	}
	n := newNotifier(t, []Sink{{Name: "slow", Kind: KindCloudEvents, URL: srv.URL}}, WithTimeout(time.Minute))
	p := proposal("prod", 1)
	// Completed returns while the receiver holds the first message: were it
	// to wait for the send, this test would hang.
	if err := n.Completed(context.Background(), p, approval.Outcome{Result: approval.ResultSucceeded, Approver: "a"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	if err := n.Completed(context.Background(), p, approval.Outcome{Result: approval.ResultFailed, Approver: "a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-slow.arrive:
		t.Fatalf("%s arrived while the receiver was held", m)
	default:
	}
	close(release)
	want := []string{TypePrefix + PlanApproved, TypePrefix + DeploySucceeded, TypePrefix + PlanApproved, TypePrefix + DeployFailed}
	if diff := cmp.Diff(want, slow.wait(4)); diff != "" {
		t.Errorf("after release (-want +got):\n%s", diff)
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []int
		header   string
		attempts int
		result   string
		minGap   time.Duration
	}{
		{name: "500 then 200", answers: []int{500, 200}, attempts: 2, result: "sent"},
		{name: "429 with Retry-After", answers: []int{429, 200}, header: "1", attempts: 2, result: "sent", minGap: time.Second},
		{name: "503 with Retry-After date", answers: []int{503, 204}, header: time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat),
			attempts: 2, result: "sent", minGap: time.Second},
		{name: "400 is not retried", answers: []int{400, 200}, attempts: 1, result: "failed"},
		{name: "every attempt fails", answers: []int{502, 502, 502, 200}, attempts: 3, result: "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, srv := newReceiver(t, checkBinary)
			rc.answer = func(n int, w http.ResponseWriter) int {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				return tc.answers[n-1]
			}
			n := newNotifier(t, []Sink{{Name: "s", Kind: KindCloudEvents, URL: srv.URL}})
			if _, err := n.Propose(context.Background(), proposal("prod", 1)); err != nil {
				t.Fatal(err)
			}
			if err := n.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			delivered := 0
			if tc.result == "sent" {
				delivered = 1
			}
			if rc.n != tc.attempts || len(rc.got) != delivered {
				t.Errorf("%d attempts delivering %d, want %d attempts delivering %d", rc.n, len(rc.got), tc.attempts, delivered)
			}
			if got := testutil.ToFloat64(n.total.WithLabelValues("s", tc.result)); got != 1 {
				t.Errorf("%s = %v, want 1", tc.result, got)
			}
			if tc.minGap > 0 && rc.times[1].Sub(rc.times[0]) < tc.minGap {
				t.Errorf("retried after %v, before Retry-After's %v", rc.times[1].Sub(rc.times[0]), tc.minGap)
			}
		})
	}
}

func TestQueueDropsOldest(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	rc, srv := newReceiver(t, checkBinary)
	rc.answer = func(n int, _ http.ResponseWriter) int {
		if n == 1 {
			entered <- struct{}{}
			<-release
		}
		return 200
	}
	n := newNotifier(t, []Sink{{Name: "s", Kind: KindCloudEvents, URL: srv.URL}}, WithQueueSize(1))
	ctx := context.Background()
	if _, err := n.Propose(ctx, proposal("a", 1)); err != nil {
		t.Fatal(err)
	}
	<-entered // the first is being sent; the queue holds one more
	for _, env := range []string{"b", "c", "d"} {
		if _, err := n.Propose(ctx, proposal(env, 1)); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(n.total.WithLabelValues("s", "dropped")); got != 2 {
		t.Errorf("dropped = %v, want 2", got)
	}
	if got := testutil.ToFloat64(n.total.WithLabelValues("s", "sent")); got != 2 {
		t.Errorf("sent = %v, want 2 (the first and the newest)", got)
	}
}

func TestFromConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hook, srv := newReceiver(t, checkWebhook([]byte("secret")))
	n, err := FromConfig([]config.Notification{{Name: "h", Type: "webhook", URLFile: write("url", srv.URL+"\n"), SecretFile: write("key", "secret\n")}}, fast(t)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Propose(context.Background(), proposal("prod", 1)); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hook.list(); len(got) != 1 {
		t.Errorf("got %v", got)
	}
	if n, err := FromConfig(nil); n != nil || err != nil {
		t.Errorf("no sinks: %v, %v; want nil, nil", n, err)
	}
	_, err = FromConfig([]config.Notification{{Name: "h", Type: "slack", URLFile: dir + "/missing"}})
	if err == nil || !strings.Contains(err.Error(), "notifications[0].urlFile") {
		t.Errorf("missing url file: %v", err)
	}
}

func TestEventsMatchConfig(t *testing.T) {
	if diff := cmp.Diff(config.NotificationEvents, Events()); diff != "" {
		t.Errorf("config accepts other events than notify sends (-config +notify):\n%s", diff)
	}
	kinds := []string{KindSlack, KindTeams, KindWebhook, KindCloudEvents}
	if diff := cmp.Diff(config.NotificationTypes, kinds); diff != "" {
		t.Errorf("config types differ (-config +notify):\n%s", diff)
	}
}

func TestRedact(t *testing.T) {
	n := newNotifier(t, []Sink{{Name: "s", Kind: KindSlack, URL: "http://127.0.0.1:1/services/T000/B000/SECRET"}},
		WithRetries(1, time.Millisecond, time.Millisecond, time.Millisecond),
		OnError(func(_ string, err error) {
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error shows the sink URL: %v", err)
			}
		}))
	if _, err := n.Propose(context.Background(), proposal("prod", 1)); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(n.total.WithLabelValues("s", "failed")); got != 1 {
		t.Errorf("failed = %v, want 1", got)
	}
}

// TestReleaseWaitAnnounced: a plan deployed and verified that waits for its
// release approval (same revision and planHash as its approval before the
// apply) is announced as plan.pending once more, saying so: release true
// in the data, and Slack's and Teams' headline that it is deployed and
// waits for release, not that a plan waits to be applied. Proposed again,
// it is announced once.
func TestReleaseWaitAnnounced(t *testing.T) {
	key := []byte("k")
	var mu sync.Mutex
	var data []Data
	_, hookSrv := newReceiver(t, func(t *testing.T, r *http.Request, body []byte) string {
		e := event.New()
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		var d Data
		strict(t, e.Data(), &d)
		mu.Lock()
		data = append(data, d)
		mu.Unlock()
		return checkWebhook(key)(t, r, body)
	})
	slack, slackSrv := newReceiver(t, checkSlack)
	teams, teamsSrv := newReceiver(t, checkTeams)
	n := newNotifier(t, []Sink{{Name: "hook", Kind: KindWebhook, URL: hookSrv.URL, Secret: key},
		{Name: "slack", Kind: KindSlack, URL: slackSrv.URL}, {Name: "teams", Kind: KindTeams, URL: teamsSrv.URL}})
	ctx := context.Background()
	p := proposal("prod", 1)
	if _, err := n.Propose(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := n.Started(ctx, p, "alice"); err != nil {
		t.Fatal(err)
	}
	release := p
	release.Release = time.Now()
	for range 2 {
		if _, err := n.Propose(ctx, release); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"Plan waiting for approval in prod", "Plan approved in prod", "Deployed to prod; waiting for release approval"}
	if diff := cmp.Diff(want, slack.list()); diff != "" {
		t.Errorf("Slack headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, teams.list()); diff != "" {
		t.Errorf("Teams headlines (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	var releases []bool
	for _, d := range data {
		releases = append(releases, d.Release)
	}
	if diff := cmp.Diff([]bool{false, false, true}, releases); diff != "" {
		t.Errorf("data.release of plan.pending, plan.approved, plan.pending (-want +got):\n%s", diff)
	}
}

// TestDeferredAnnounced: a plan deferred to its deploy window is announced once as deploy.deferred to
// every sink, the data's message saying until when, Slack's headline saying it waits.
func TestDeferredAnnounced(t *testing.T) {
	key := []byte("k")
	var mu sync.Mutex
	var data []Data
	var types []string
	_, hookSrv := newReceiver(t, func(t *testing.T, r *http.Request, body []byte) string {
		e := event.New()
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		var d Data
		strict(t, e.Data(), &d)
		mu.Lock()
		data, types = append(data, d), append(types, e.Type())
		mu.Unlock()
		return checkWebhook(key)(t, r, body)
	})
	slack, slackSrv := newReceiver(t, checkSlack)
	bus, busSrv := newReceiver(t, checkBinary)
	n := newNotifier(t, []Sink{{Name: "hook", Kind: KindWebhook, URL: hookSrv.URL, Secret: key},
		{Name: "slack", Kind: KindSlack, URL: slackSrv.URL}, {Name: "bus", Kind: KindCloudEvents, URL: busSrv.URL}})
	ctx := context.Background()
	p := proposal("prod", 1)
	const why = "waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"
	for range 2 { // deferred again (a restart): announced once
		if err := n.Deferred(ctx, p, why); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Deploy deferred in prod until its deploy window"}, slack.list()); diff != "" {
		t.Errorf("Slack headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{TypePrefix + DeployDeferred}, bus.list()); diff != "" {
		t.Errorf("CloudEvents (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{TypePrefix + "deploy.deferred"}, types); diff != "" {
		t.Errorf("webhook events (-want +got):\n%s", diff)
	}
	if len(data) != 1 || data[0].Message != why || data[0].Environment != "prod" {
		t.Errorf("event data = %+v, want prod's plan saying %q", data, why)
	}
}
