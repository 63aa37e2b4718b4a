package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// checkSequenceEvent checks a sequence step's data: the run's fields, a
// result and status on finished events only, and each other key a task's
// reserved space (an object); it names the event by type and result.
func checkSequenceEvent(t *testing.T, e *event.Event) string {
	t.Helper()
	var raw map[string]json.RawMessage
	strict(t, e.Data(), &raw)
	fields := []string{"stage", "sequence", "environment", "revision", "planHash", "result", "status", "message", "approver", "versions"}
	for _, k := range []string{"stage", "sequence", "environment", "revision", "versions"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("%s data lacks %q: %s", e.Type(), k, e.Data())
		}
	}
	var d struct {
		Environment, Result, Status string
		Versions                    map[string]string
	}
	if err := json.Unmarshal(e.Data(), &d); err != nil {
		t.Fatal(err)
	}
	finished := strings.HasSuffix(e.Type(), ".finished")
	if d.Environment != e.Subject() || finished != (d.Result != "") || finished != (d.Status != "") {
		t.Errorf("%s data: %s", e.Type(), e.Data())
	}
	for k, v := range raw {
		if slices.Contains(fields, k) {
			continue
		}
		var space map[string]any
		if err := json.Unmarshal(v, &space); err != nil || !slices.Contains([]string{"approval", "deployment", "test", "evaluation", "release"}, k) {
			t.Errorf("%s data key %q = %s: want a task's reserved space", e.Type(), k, v)
		}
	}
	if d.Result != "" {
		return e.Type() + " " + d.Result
	}
	return e.Type()
}

// checkLockEvent checks a lock event's attributes and data.
func checkLockEvent(t *testing.T, e *event.Event) string {
	t.Helper()
	if e.SpecVersion() != "1.0" || e.ID() == "" || e.Source() != "stagehand/locks" || e.Time().IsZero() || e.DataContentType() != "application/json" {
		t.Fatalf("CloudEvent attributes: %s", e)
	}
	var d struct {
		Change       string          `json:"change"`
		Lock         json.RawMessage `json:"lock"`
		Environments []string        `json:"environments"`
	}
	strict(t, e.Data(), &d)
	l := lock.Lock{}
	if err := json.Unmarshal(d.Lock, &l); err != nil || l.Path != e.Subject() || l.Author == "" {
		t.Errorf("lock event lock %s: %v", d.Lock, err)
	}
	return fmt.Sprintf("%s %s %s %v", e.Type(), d.Change, l.Path, d.Environments)
}

// steps are the events of one run of [approval, deployment, test, release]
// as the daemon sends them.
func steps(env string) []sequence.Event {
	data := func(result, status string, tasks ...string) sequence.Data {
		d := sequence.Data{Stage: env, Sequence: "delivery", Environment: env, Revision: "0123456789abcdef0123", PlanHash: "sha256:" + env,
			Result: result, Status: status, Approver: "alice", Versions: map[string]string{"web": "1.0.0"}, Tasks: map[string]json.RawMessage{}}
		for _, t := range tasks {
			d.Tasks[t] = json.RawMessage(`{}`)
		}
		d.Tasks["test"] = json.RawMessage(`{"kind":"http","requests":3}`)
		return d
	}
	var out []sequence.Event
	add := func(name, kind, task, result, status string) {
		out = append(out, sequence.Event{Environment: env, Name: name, Kind: kind, Task: task, Time: time.Now(),
			Data: data(result, status, "approval", "deployment", "release")})
	}
	add(env+".delivery.started", sequence.KindStarted, "", "", "")
	for _, task := range []string{"approval", "deployment", "test", "release"} {
		add(task+".triggered", sequence.KindTriggered, task, "", "")
		add(task+".started", sequence.KindStarted, task, "", "")
		add(task+".finished", sequence.KindFinished, task, "pass", "succeeded")
	}
	add(env+".delivery.finished", sequence.KindFinished, "", "pass", "succeeded")
	return out
}

// TestSequenceEventsInOrder: every step of a run reaches a CloudEvents
// receiver and a signed webhook, decoded strictly, in order; Slack without
// an events filter hears none of them, Slack with one only what it names.
func TestSequenceEventsInOrder(t *testing.T) {
	key := []byte("k")
	bus, busSrv := newReceiver(t, checkBinary)
	hook, hookSrv := newReceiver(t, checkWebhook(key))
	chat, chatSrv := newReceiver(t, checkSlack)
	named, namedSrv := newReceiver(t, checkSlack)
	n := newNotifier(t, []Sink{{Name: "bus", Kind: KindCloudEvents, URL: busSrv.URL}, {Name: "hook", Kind: KindWebhook, URL: hookSrv.URL, Secret: key},
		{Name: "chat", Kind: KindSlack, URL: chatSrv.URL},
		{Name: "named", Kind: KindSlack, URL: namedSrv.URL, Events: []string{"*.delivery.finished", "test.finished"}}})
	ctx := context.Background()
	for _, e := range steps("staging") {
		n.SequenceEvent(ctx, e)
	}
	want := []string{"staging.delivery.started",
		"approval.triggered", "approval.started", "approval.finished pass",
		"deployment.triggered", "deployment.started", "deployment.finished pass",
		"test.triggered", "test.started", "test.finished pass",
		"release.triggered", "release.started", "release.finished pass",
		"staging.delivery.finished pass"}
	for i := range want {
		want[i] = TypePrefix + want[i]
	}
	if diff := cmp.Diff(want, bus.wait(len(want))); diff != "" {
		t.Errorf("CloudEvents receiver (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, hook.wait(len(want))); diff != "" {
		t.Errorf("webhook (-want +got):\n%s", diff)
	}
	wantNamed := []string{"staging: task test of the staging delivery sequence finished", "staging: staging delivery sequence finished"}
	if diff := cmp.Diff(wantNamed, named.wait(2)); diff != "" {
		t.Errorf("Slack with a filter (-want +got):\n%s", diff)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := chat.list(); len(got) != 0 {
		t.Errorf("Slack without a filter heard sequence steps: %v", got)
	}
}

// TestLockEvents: locks taken and removed through a lock.Service observed
// by the notifier reach a signed webhook as lock.taken and lock.released,
// naming the environments they concern; the environments filter applies,
// and the reconciler's own apply locks are not sent.
func TestLockEvents(t *testing.T) {
	key := []byte("k")
	hook, hookSrv := newReceiver(t, checkWebhook(key))
	prodOnly, prodSrv := newReceiver(t, checkWebhook(key))
	n := newNotifier(t, []Sink{{Name: "hook", Kind: KindWebhook, URL: hookSrv.URL, Secret: key, Events: []string{LockTaken, LockReleased}},
		{Name: "prod", Kind: KindWebhook, URL: prodSrv.URL, Secret: key, Environments: []string{"prod"}}},
		WithLockPaths(map[string]string{"prod": "apps/production", "staging": "apps/staging", "devel": ""}))
	svc, err := lock.New(lock.NewMemory(), lock.WithObserver(n.LockChanged))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	take := func(path, author string) {
		t.Helper()
		l := lock.Lock{Path: path, Type: lock.Deploy, Author: author, ExpiresAt: time.Now().Add(time.Hour)}
		l.Default(nil)
		if _, err := svc.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	take("apps/staging/web", "bob")                // under staging
	take("apps/production/a", lock.ReservedAuthor) // the reconciler's own: not sent
	take("apps", "alice")                          // above both (a parent may be locked after its children)
	if _, err := svc.Unlock(ctx, "apps", lock.Deploy, false); err != nil {
		t.Fatal(err)
	}
	want := []string{
		TypePrefix + "lock.taken taken apps/staging/web [staging]",
		TypePrefix + "lock.taken taken apps [prod staging]",
		TypePrefix + "lock.released released apps [prod staging]",
	}
	if diff := cmp.Diff(want, hook.wait(3)); diff != "" {
		t.Errorf("webhook (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{want[1], want[2]}, prodOnly.wait(2)); diff != "" {
		t.Errorf("prod's sink (-want +got):\n%s", diff)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := hook.list(); len(got) != 3 {
		t.Errorf("webhook heard %v", got)
	}
}
