package wake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRing: the first ring creates the ConfigMap, later ones patch its one
// annotation with the time and the ringing replica's identity. (On the real
// API server: the daemon's TestPushToStandby.)
func TestRing(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	for i, id := range []string{"replica-a", "replica-b"} {
		b := &Bell{Client: client, Namespace: "stagehand", Identity: id, Now: func() time.Time { return now.Add(time.Duration(i) * time.Second) }}
		if err := b.Ring(ctx); err != nil {
			t.Fatalf("ring %d: %v", i, err)
		}
		cm, err := client.CoreV1().ConfigMaps("stagehand").Get(ctx, ConfigMapName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := cm.Annotations[Annotation]; !strings.HasSuffix(v, " "+id) || !strings.HasPrefix(v, "2026-11-29T03:00:0") {
			t.Errorf("after ring %d: %s = %q; want the time and %s", i, Annotation, v, id)
		}
	}
}

// TestConsume: every change polls; a watch that expired ends asking to list
// again, one that failed otherwise ends with its error; bookmarks move the
// resourceVersion on.
func TestConsume(t *testing.T) {
	for _, tc := range []struct {
		name    string
		events  []watch.Event
		polls   int
		wantRV  string
		wantErr string
	}{
		{name: "changes poll", events: []watch.Event{{Type: watch.Added, Object: cm("5")}, {Type: watch.Modified, Object: cm("6")},
			{Type: watch.Bookmark, Object: cm("9")}}, polls: 2, wantRV: "9"},
		{name: "expired: list again", events: []watch.Event{{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure,
			Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}}}},
		{name: "failed", events: []watch.Event{{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure,
			Code: 500, Reason: metav1.StatusReasonInternalError, Message: "etcd is down"}}}, wantErr: "etcd is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watch.NewFakeWithChanSize(len(tc.events), false)
			for _, ev := range tc.events {
				w.Action(ev.Type, ev.Object)
			}
			w.Stop()
			polls := 0
			rv, err := consume(w, "1", func() { polls++ })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("consume: %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || rv != tc.wantRV || polls != tc.polls {
				t.Errorf("consume = %q, %v after %d polls; want %q after %d", rv, err, polls, tc.wantRV, tc.polls)
			}
		})
	}
}

// TestWatchEndsQuietly: Watch returns once ctx ends, logging nothing.
func TestWatchEndsQuietly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bell{Client: fake.NewClientset(), Namespace: "stagehand", Identity: "a", Now: time.Now, Log: logr.Discard()}
	done := make(chan struct{})
	go func() { defer close(done); b.Watch(ctx, func() {}, func() {}) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return once its context ended")
	}
}

// TestWatchPollsAfterItsFirstList: a ring before the watch began (the
// replica has just begun to lead) is not lost: the first list calls missed
// (a poll, not a push: nobody is known to have pushed), and every ring
// after it calls rung.
func TestWatchPollsAfterItsFirstList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	ringer := &Bell{Client: client, Namespace: "stagehand", Identity: "b", Now: time.Now, Log: logr.Discard()}
	if err := ringer.Ring(ctx); err != nil {
		t.Fatal(err)
	}
	polls, missed := make(chan struct{}, 10), make(chan struct{}, 10)
	b := &Bell{Client: client, Namespace: "stagehand", Identity: "a", Now: time.Now, Log: logr.Discard()}
	go b.Watch(ctx, func() { polls <- struct{}{} }, func() { missed <- struct{}{} })
	select {
	case <-missed:
	case <-polls:
		t.Fatal("the ring before the watch began was told as a ring seen")
	case <-time.After(10 * time.Second):
		t.Fatal("no poll for the ring before the watch began")
	}
	// The fake clientset's watch starts asynchronously; ring until it is seen.
	deadline := time.Now().Add(10 * time.Second)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatal("no poll for a ring while watching")
		}
		if err := ringer.Ring(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-polls:
			seen = true
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func cm(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, ResourceVersion: rv}}
}
