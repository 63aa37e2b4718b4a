package state

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// versioned is a fake clientset whose ConfigMaps carry resourceVersions that
// an update must match, as the API server's do (the fake's tracker keeps
// none), and which records the verbs sent for the state of env.
func versioned(env string) (*fake.Clientset, func() []string) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	n := 0
	var verbs []string
	cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		var name string
		switch a.GetVerb() { // (create and update actions have the same methods)
		case "create":
			cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap)
			name = cm.Name
			n++
			cm.ResourceVersion = strconv.Itoa(n)
		case "update":
			cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
			name = cm.Name
			cur, err := cs.Tracker().Get(a.GetResource(), a.GetNamespace(), cm.Name)
			if err == nil && cur.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
				verbs = append(verbs, "update (conflict)")
				return true, nil, apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, nil)
			}
			n++
			cm.ResourceVersion = strconv.Itoa(n)
		case "get":
			name = a.(k8stesting.GetAction).GetName()
		}
		if name == ConfigMapName(env) {
			verbs = append(verbs, a.GetVerb())
		}
		return false, nil, nil
	})
	return cs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := verbs
		verbs = nil
		return out
	}
}

// TestUpdateFromSeen: an Update starts from the state as the Store last read
// or wrote it, without reading it again; when another writer wrote since,
// the API server refuses that write and the Update reads and writes again,
// losing nothing of the other's.
func TestUpdateFromSeen(t *testing.T) {
	ctx := context.Background()
	cs, verbs := versioned("prod")
	s, other := NewStore(cs, "stagehand"), NewStore(cs, "stagehand")
	record := func(s *Store, rev string) {
		t.Helper()
		if _, err := s.Record(ctx, "prod", approval.Entry{Revision: rev, Result: approval.ResultSucceeded}); err != nil {
			t.Fatal(err)
		}
	}
	record(s, "r1") // creates the state
	if _, err := s.Load(ctx, "prod"); err != nil {
		t.Fatal(err)
	}
	verbs()
	record(s, "r2")
	record(s, "r3")
	if diff := cmp.Diff([]string{"update", "update"}, verbs()); diff != "" {
		t.Errorf("requests of two Updates after a Load (-want +got):\n%s", diff)
	}

	record(other, "r4") // another replica
	verbs()
	record(s, "r5")
	if diff := cmp.Diff([]string{"update (conflict)", "get", "update"}, verbs()); diff != "" {
		t.Errorf("requests of an Update after another writer's (-want +got):\n%s", diff)
	}
	st, err := other.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range st.History {
		got = append(got, e.Revision)
	}
	if diff := cmp.Diff([]string{"r5", "r4", "r3", "r2", "r1"}, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestUpdateFromSeenFenced: a fenced Store never refuses its term on the
// state as it last saw it: claimed for its term since (by another Store of
// the process), the state is read and written, and the replica is not told
// it lost it.
func TestUpdateFromSeenFenced(t *testing.T) {
	ctx := context.Background()
	cs, _ := versioned("prod")
	s := NewStore(cs, "stagehand")
	if err := s.SetStatus(ctx, "prod", []byte(`{}`)); err != nil { // seen unclaimed
		t.Fatal(err)
	}
	token := FenceToken(1, "replica-a")
	if _, err := NewStore(cs, "stagehand").Claim(ctx, "prod", token); err != nil {
		t.Fatal(err)
	}
	lost := 0
	if err := s.Fenced(token, func() { lost++ }).SetStatus(ctx, "prod", []byte(`{"a":1}`)); err != nil {
		t.Fatalf("write under the term that claimed the state: %v", err)
	}
	if lost != 0 {
		t.Errorf("told %d times it lost the state, want never", lost)
	}
}
