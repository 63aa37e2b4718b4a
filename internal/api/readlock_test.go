package api

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// identityCorpus is testdata/identity_corpus.json.
type identityCorpus struct {
	Cases []struct {
		Name, As, Method, Path, Body string
		WantCode                     int
		WantBody                     string
		Locks, NoLocks               []string
	}
	WantAdminEvents []string
}

// TestIdentityCorpus runs the API's adversarial corpus of identities
// (testdata/identity_corpus.json) against locks kept as Lock objects on the
// real API server and GitHub user tokens verified by the OpenAPI-checked
// GitHub test server: who may read, lock and remove what with each kind of
// credential, and that a refused request leaves the locks as they were and
// records no admin Event.
func TestIdentityCorpus(t *testing.T) {
	b, err := os.ReadFile("testdata/identity_corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var corpus identityCorpus
	if err := json.Unmarshal(b, &corpus); err != nil {
		t.Fatalf("testdata/identity_corpus.json: %v", err)
	}
	env := cluster.Env(t)
	ns := env.Namespace(t)
	k, err := lock.NewKubernetesForConfig(env.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(k, lock.WithOwnerEqual(wire.LockOwnerEqual))
	if err != nil {
		t.Fatal(err)
	}
	gh := newGitHub(t)
	srv := newServer(t, &backend{locks: svc}, withOps(t, withGitHub(gh)...))
	tokens := map[string]string{"legacy": legacyToken}
	for _, tok := range testTokens() {
		tokens["token:"+tok.Name] = tok.Token
	}
	credential := func(as string) string {
		t.Helper()
		if login, ok := strings.CutPrefix(as, "github:"); ok {
			return gh.OAuth().UserToken(login)
		}
		tok, ok := tokens[as]
		if !ok {
			t.Fatalf("the corpus names an unknown credential %q", as)
		}
		return tok
	}

	ctx := context.Background()
	if code, body := call(t, srv, "POST", "/api/v1/locks", lockerToken, `{"path":"apps/prod/ci","type":"deploy","duration":"2h"}`); code != 201 {
		t.Fatalf("ci-locker locks apps/prod/ci = %d %s", code, body)
	}
	for _, l := range []lock.Lock{
		{Path: "apps/prod/old", Type: lock.Deploy, Author: "alice"},                  // written before authors were typed
		{Path: "apps/prod/applying", Type: lock.Deploy, Author: lock.ReservedAuthor}, // an older build's apply lock
	} {
		l.ExpiresAt = time.Now().Add(2 * time.Hour)
		if _, err := svc.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range corpus.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			code, body := call(t, srv, tc.Method, tc.Path, credential(tc.As), tc.Body)
			if code != tc.WantCode || !strings.Contains(strings.ReplaceAll(body, `": "`, `":"`), tc.WantBody) {
				t.Errorf("%s %s as %s = %d %s, want %d containing %q", tc.Method, tc.Path, tc.As, code, clip(body), tc.WantCode, tc.WantBody)
			}
			for _, p := range tc.Locks {
				if _, err := svc.Get(ctx, p); err != nil {
					t.Errorf("lock %s after the request: %v, want it there", p, err)
				}
			}
			for _, p := range tc.NoLocks {
				if l, err := svc.Get(ctx, p); err == nil {
					t.Errorf("lock %s after the request: %+v, want none", p, l)
				}
			}
		})
	}
	kc, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + lock.UnlockedReason})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs.Items {
		got = append(got, e.Message)
	}
	if diff := cmp.Diff(corpus.WantAdminEvents, got); diff != "" {
		t.Errorf("admin unlock Events (-want +got):\n%s", diff)
	}
	if len(corpus.Cases) < 30 {
		t.Errorf("the identity corpus has %d cases, want at least 30", len(corpus.Cases))
	}
}
