package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/notify"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// ceReceiver is a CloudEvents HTTP receiver that decodes strictly (the
// SDK's binary-mode reader, then spec version and required attributes) and
// holds every request until released.
type ceReceiver struct {
	t       *testing.T
	release chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	types   []string
}

func newCEReceiver(t *testing.T) (*ceReceiver, string) {
	rc := &ceReceiver{t: t, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case rc.entered <- struct{}{}:
		default:
		}
		<-rc.release
		e, err := cehttp.NewEventFromHTTPRequest(r)
		if err != nil {
			t.Errorf("decoding a CloudEvent: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if err := e.Validate(); err != nil || e.SpecVersion() != "1.0" || e.ID() == "" || e.Source() == "" || e.Time().IsZero() ||
			!strings.HasPrefix(e.Type(), notify.TypePrefix) || e.DataContentType() != "application/json" {
			t.Errorf("CloudEvent %s: %v", e, err)
		}
		rc.mu.Lock()
		rc.types = append(rc.types, strings.TrimPrefix(e.Type(), notify.TypePrefix))
		rc.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-rc.release:
		default:
			close(rc.release)
		}
	})
	return rc, srv.URL
}

func (rc *ceReceiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.types...)
}

// TestSequenceNotifiedWithoutDelay: with the notifier as gate, sequence
// listener and lock observer (as `reconciler run` composes them), a deploy
// runs its whole sequence while the CloudEvents receiver holds the first
// request it got; released, the receiver decodes every step in order, and
// a lock taken through the daemon's lock service arrives as lock.taken
// (the daemon's own apply lock does not).
func TestSequenceNotifiedWithoutDelay(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "devel")
	h.git.Repo("manifests").Commit(t, "main", map[string]string{"pipeline.yaml": testPipeline}, "sequence")
	rc, url := newCEReceiver(t)
	nt, err := notify.New([]notify.Sink{{Name: "bus", Kind: notify.KindCloudEvents, URL: url}}, notify.WithTimeout(time.Minute),
		notify.WithLockPaths(map[string]string{"devel": "apps/devel"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = nt.Close(cctx)
	})
	test := &runner{result: sequence.Result{Result: promote.ResultPass}}
	d, _, _ := sequenceDaemonWith(t, h, []wire.Option{wire.WithLockObserver(nt.LockChanged)},
		WithTask(promote.TaskTest, test.run), WithGate(approval.Gates(&recordingGate{}, nt)), WithSequenceListener(nt))

	done := make(chan error, 1)
	go func() { done <- d.Once(ctx) }()
	<-rc.entered // the receiver holds the first event from here on
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a bound, not a measurement: the apply waits for no sink
		t.Fatal("the deploy did not finish while a sink was held")
	}
	if got := rc.received(); len(got) != 0 {
		t.Fatalf("the receiver answered while held: %v", got)
	}
	l := lock.Lock{Path: "apps/devel", Type: lock.Deploy, Author: "alice", ExpiresAt: time.Now().Add(time.Hour)}
	l.Default(nil)
	if _, err := d.LockService().Lock(ctx, l); err != nil {
		t.Fatal(err)
	}
	close(rc.release)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := nt.Close(cctx); err != nil {
		t.Fatal(err)
	}
	// The steps in order; plan.approved comes from the gate's Started,
	// which runs beside the apply, so only its presence is checked.
	var steps, others []string
	for _, typ := range rc.received() {
		if slices.Contains(notify.Events(), typ) {
			others = append(others, typ)
		} else {
			steps = append(steps, typ)
		}
	}
	want := []string{
		"devel.delivery.started",
		"deployment.triggered", "deployment.started", "deployment.finished",
		"test.triggered", "test.started", "test.finished",
		"release.triggered", "release.started", "release.finished",
		"devel.delivery.finished",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("the receiver decoded the steps (-want +got):\n%s", diff)
	}
	slices.Sort(others)
	if diff := cmp.Diff([]string{"deploy.succeeded", "lock.taken", "plan.approved"}, others); diff != "" {
		t.Errorf("the receiver decoded besides (-want +got):\n%s", diff)
	}
}
