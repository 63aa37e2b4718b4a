package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestLocksOfTypedOwners: the page takes locks as github:<login> under the
// rules of the lock service the reconciler builds: a lock an older build
// wrote for the bare name demo is not the signed-in demo's to remove or
// extend (unlock and extend agree), a ten-year freeze is refused naming the
// maximum, and a hold needs lock:admin, which the page has not.
func TestLocksOfTypedOwners(t *testing.T) {
	b := newBackend(t)
	svc, err := lock.New(lock.NewMemory(), lock.WithClock(func() time.Time { return t0 }), lock.WithOwnerEqual(wire.LockOwnerEqual))
	if err != nil {
		t.Fatal(err)
	}
	b.locks = svc
	base := serve(t, b, WithDemoLogin("demo"))
	br := signedIn(t, base)
	csrf := br.csrf("/locks")
	step := func(path string, form url.Values, want string) {
		t.Helper()
		form.Set("csrf", csrf)
		if code, _, body := br.post(path, form); code != http.StatusSeeOther {
			t.Fatalf("POST %s = %d %s", path, code, body)
		}
		if _, body := br.get("/locks"); !strings.Contains(body, want) {
			t.Errorf("after POST %s %v the page lacks %q:\n%s", path, form, want, body)
		}
	}
	if _, err := svc.Lock(context.Background(), lock.Lock{Path: "apps/qa", Type: lock.Deploy, Author: "demo", ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	step("/locks/unlock", url.Values{"path": {"apps/qa"}, "type": {"deploy"}}, "Not unlocked: github:demo may remove only their own locks, and apps/qa (deploy by demo) is not")
	step("/locks/extend", url.Values{"path": {"apps/qa"}, "type": {"deploy"}, "duration": {"1h"}}, "Not extended: demo&#39;s lock on apps/qa belongs to them")
	if l, err := svc.Get(context.Background(), "apps/qa"); err != nil || !l.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("the old record's lock after refused unlock and extend: %+v, %v; want it as it was", l, err)
	}
	step("/locks", url.Values{"path": {"apps/prod"}, "type": {"freeze"}, "duration": {"3650d"}}, "Not locked: lock apps/prod: a release freeze lasting 3650d is refused: a lock of type freeze lasts at most 30d")
	step("/locks", url.Values{"path": {"apps/prod/hold"}, "type": {"hold"}, "duration": {"1h"}}, "Not locked: github:demo may not lock apps/prod/hold for a rollback hold")
	step("/locks", url.Values{"path": {"apps/prod"}, "type": {"deploy"}, "duration": {"1h"}}, "Locked apps/prod for a deploy")
	step("/locks/extend", url.Values{"path": {"apps/prod"}, "type": {"deploy"}, "duration": {"1d"}}, "Not extended: lock apps/prod: a deploy lasting 25h is refused: a lock of type deploy lasts at most 1d")
	step("/locks/extend", url.Values{"path": {"apps/prod"}, "type": {"deploy"}, "duration": {"2h"}}, "Extended the lock on apps/prod (a deploy)")
	step("/locks/unlock", url.Values{"path": {"apps/prod"}, "type": {"deploy"}}, "Unlocked apps/prod (a deploy).")
}
