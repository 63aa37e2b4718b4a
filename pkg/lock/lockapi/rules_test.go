package lockapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// typedOwner compares owners as a server with typed identities does
// (internal/identity): "kind:name", GitHub logins without case, every other
// kind exactly; a bare name written before authors were typed equals no
// typed name.
func typedOwner(author, caller string) bool {
	ak, an, aok := strings.Cut(author, ":")
	ck, cn, cok := strings.Cut(caller, ":")
	known := func(k string) bool { return k == "github" || k == "token" || k == "kubernetes" || k == "stagehand" }
	aok, cok = aok && known(ak), cok && known(ck)
	switch {
	case aok != cok:
		return false
	case !aok:
		return author == caller
	case ak != ck:
		return false
	case ak == "github":
		return strings.EqualFold(an, cn)
	}
	return an == cn
}

func TestRulesMemory(t *testing.T) {
	m, c := lock.NewMemory(), newFakeClock()
	s, err := lock.New(m, lock.WithClock(c.Now), lock.WithOwnerEqual(typedOwner))
	if err != nil {
		t.Fatal(err)
	}
	testRules(t, s, func(*testing.T) []string { return m.Unlocks() })
}

func TestRulesKubernetes(t *testing.T) {
	k, cfg, ns := newKubeStorage(t)
	c := newFakeClock()
	s, err := lock.New(k, lock.WithClock(c.Now), lock.WithOwnerEqual(typedOwner))
	if err != nil {
		t.Fatal(err)
	}
	events, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testRules(t, s, func(t *testing.T) []string {
		evs, err := events.Resource(corev1.SchemeGroupVersion.WithResource("events")).Namespace(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + lock.UnlockedReason})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs.Items {
			msg, _ := e.Object["message"].(string)
			out = append(out, msg)
		}
		return out
	})
}

// testRules: owners compare as typed identities in unlock and extend alike
// (a GitHub login named like a token is not that token; a bare name from an
// old record is only an admin's to remove, recorded); every type has a
// maximum duration; holds need lock:admin.
func testRules(t *testing.T, s *lock.Service, recorded func(*testing.T) []string) {
	ctx := context.Background()
	srv := newOwnedAPI(t, s)
	take := func(l lock.Lock) {
		t.Helper()
		l.ExpiresAt = s.Now().Add(time.Hour)
		if _, err := s.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if code, body := callAs(t, srv, "token:ci-locker", "POST", "/api/v1/locks", `{"path":"apps/prod/a","type":"deploy","duration":"1h"}`); code != http.StatusCreated || !strings.Contains(body, `"author":"token:ci-locker"`) {
		t.Fatalf("token ci-locker locks = %d %s", code, body)
	}
	take(lock.Lock{Path: "apps/prod/old", Type: lock.Deploy, Author: "alice"}) // written before authors were typed
	if code, body := callAs(t, srv, "github:alice", "POST", "/api/v1/locks", `{"path":"apps/prod/b","type":"deploy","duration":"1h"}`); code != http.StatusCreated {
		t.Fatalf("github alice locks = %d %s", code, body)
	}

	for _, tc := range []struct {
		name, who, method, path string
		wantCode                int
		wantBody                string
	}{
		{"a login named like the token unlocks", "github:ci-locker", "DELETE", "/api/v1/locks/apps/prod/a?type=deploy", 403,
			"github:ci-locker may remove only their own locks, and apps/prod/a (deploy by token:ci-locker) is not"},
		{"a token named like the login unlocks", "token:alice", "DELETE", "/api/v1/locks/apps/prod/b?type=deploy", 403, "(deploy by github:alice) is not"},
		{"a login spelled like an old record's bare name unlocks", "github:alice", "DELETE", "/api/v1/locks/apps/prod/old?type=deploy", 403,
			"apps/prod/old (deploy by alice) is not"},
		{"a token spelled like an old record's bare name unlocks", "token:alice", "DELETE", "/api/v1/locks/apps/prod/old?type=deploy", 403, "(deploy by alice)"},
		{"a login named like the reconciler locks", "stagehand:reconciler", "POST", "/api/v1/locks", 400, "reserved"},
		{"a ten-year freeze", "github:alice", "POST", "/api/v1/locks", 400, "a lock of type freeze lasts at most 30d"},
		{"a hold by a non-admin", "github:alice", "POST", "/api/v1/locks", 403, "holds (locks of type hold, and any lock whose path ends in /hold) are placed by rollbacks"},
		{"a deploy lock at a hold's path by a non-admin", "token:ci-locker", "POST", "/api/v1/locks", 403, "may not lock apps/prod/hold for a deploy"},
		{"the login's case differs", "github:ALICE", "DELETE", "/api/v1/locks/apps/prod/b?type=deploy", 200, `"author":"github:alice"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			switch tc.name {
			case "a login named like the reconciler locks":
				body = `{"path":"apps/qa","type":"deploy","duration":"1h"}`
			case "a ten-year freeze":
				body = `{"path":"apps/prod","type":"freeze","duration":"3650d"}`
			case "a hold by a non-admin":
				body = `{"path":"apps/prod/hold","type":"hold","duration":"1h","allow":["deploy"]}`
			case "a deploy lock at a hold's path by a non-admin":
				body = `{"path":"apps/prod/hold","type":"deploy","duration":"1h"}`
			}
			if code, got := callAs(t, srv, tc.who, tc.method, tc.path, body); code != tc.wantCode || !strings.Contains(got, tc.wantBody) {
				t.Errorf("%s %s as %s = %d %s, want %d containing %q", tc.method, tc.path, tc.who, code, got, tc.wantCode, tc.wantBody)
			}
		})
	}
	if got := recorded(t); len(got) != 0 {
		t.Errorf("refused unlocks recorded %q", got)
	}
	for _, p := range []string{"apps/prod/a", "apps/prod/old"} {
		if _, err := s.Get(ctx, p); err != nil {
			t.Errorf("%s after refused unlocks: %v, want it kept", p, err)
		}
	}
	for _, p := range []string{"apps/prod", "apps/prod/hold", "apps/qa"} {
		if _, err := s.Get(ctx, p); !errors.Is(err, lock.ErrNotFound) {
			t.Errorf("%s after refused locks: %v, want no lock", p, err)
		}
	}

	// Extend compares owners as unlock does.
	until := s.Now().Add(2 * time.Hour)
	var re *lock.RefusedError
	if _, err := s.For(lock.Caller{Name: "github:ci-locker"}).Extend(ctx, "apps/prod/a", lock.Deploy, until); !errors.As(err, &re) {
		t.Errorf("For(...).Extend(github:ci-locker) of token:ci-locker's lock: %v, want *lock.RefusedError", err)
	}
	if _, err := s.For(lock.Caller{Name: "github:alice"}).Extend(ctx, "apps/prod/old", lock.Deploy, until); !errors.As(err, &re) {
		t.Errorf("For(...).Extend(github:alice) of the bare name alice's lock: %v, want *lock.RefusedError", err)
	}
	if l, err := s.For(lock.Caller{Name: "token:ci-locker"}).Extend(ctx, "apps/prod/a", lock.Deploy, until); err != nil || !l.ExpiresAt.Equal(until) {
		t.Errorf("Extend by the owner = %+v, %v; want expiring %s", l, err, until)
	}
	var tl *lock.TooLongError
	if _, err := s.For(lock.Caller{Name: "token:ci-locker"}).Extend(ctx, "apps/prod/a", lock.Deploy, s.Now().Add(25*time.Hour)); !errors.As(err, &tl) || !strings.Contains(err.Error(), "a lock of type deploy lasts at most 1d") {
		t.Errorf("Extend past the maximum: %v, want *lock.TooLongError naming 1d", err)
	}

	// An admin removes the old record's lock and the token's, recorded; and may place a hold.
	for _, p := range []string{"apps/prod/old", "apps/prod/a"} {
		if code, body := callAs(t, srv, "token:oncall!", "DELETE", "/api/v1/locks/"+p+"?type=deploy", ""); code != http.StatusOK {
			t.Errorf("lock:admin unlocks %s = %d %s", p, code, body)
		}
	}
	want := []string{
		"deploy lock apps/prod/a of token:ci-locker unlocked by token:oncall (lock:admin)",
		"deploy lock apps/prod/old of alice unlocked by token:oncall (lock:admin)",
	}
	got := recorded(t)
	slices.Sort(got) // Events are listed in no particular order
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded unlocks (-want +got):\n%s", diff)
	}
	if code, body := callAs(t, srv, "token:oncall!", "POST", "/api/v1/locks", `{"path":"apps/prod/hold","type":"hold","duration":"1h","allow":["deploy"]}`); code != http.StatusCreated {
		t.Errorf("lock:admin places a hold = %d %s", code, body)
	}
}
