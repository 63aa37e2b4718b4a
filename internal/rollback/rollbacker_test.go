package rollback

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestAutomaticRollbackHook: the daemon's RollbackHook, after a failed
// rollout of c2 was rolled back, opens the rollback pull request back to what
// ran before (c1, by the history) and places the hold; rolling back by
// history id names the entry; an unknown id is refused naming it.
func TestAutomaticRollbackHook(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	web := func(tag string) string {
		return `{"services": [{"name": "web", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"
	}
	c1 := gh.Repo("acme", "manifests").Commit("main", map[string]string{
		"environments/prod/manifest.json": `{"includes": ["./web.json"]}` + "\n", "environments/prod/web.json": web("1.0.0")}, "prod")
	c2 := gh.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/web.json": web("2.0.0")}, "web 2")
	rest, err := github.NewClient(gh.Client()).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	bot, err := prbot.New(rest, "acme", "manifests")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	ran := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	history := []approval.Entry{
		{ID: 2, Revision: c2, Result: approval.ResultRolledBack, Approver: "bob", Started: ran.Add(time.Hour), Finished: ran.Add(time.Hour)},
		{ID: 1, Revision: c1, Result: approval.ResultSucceeded, Approver: "maria", Started: ran, Finished: ran},
	}
	rb := newRollbacker(t, bot, svc, &fakeReconciler{history: history,
		pin: func(*approval.Pin) error { return errors.New("not in incident mode") }})

	if err := rb.Automatic(ctx, "prod", 2, "pods of Deployment/web not ready within 5m"); err != nil {
		t.Fatal(err)
	}
	prs := gh.Repo("acme", "manifests").PullRequests()
	if len(prs) != 1 || !strings.HasPrefix(prs[0].Title, "Rollback prod to "+c1[:7]+": automatic rollback of a failed rollout (history entry 2): pods of Deployment/web") {
		t.Fatalf("pull requests = %+v", prs)
	}
	for _, want := range []string{"(history entry 1)", "| web | web | `2.0.0` | `1.0.0` | 2026-11-20T08:00:00Z | maria |"} {
		if !strings.Contains(prs[0].Body, want) {
			t.Errorf("body lacks %q:\n%s", want, prs[0].Body)
		}
	}
	if got, _ := gh.Repo("acme", "manifests").File(prs[0].Head, "environments/prod/web.json"); got != web("1.0.0") {
		t.Errorf("web.json on the rollback branch:\n%s", got)
	}
	h, err := svc.Get(ctx, "apps/prod/hold")
	if err != nil || h.Type != lock.Hold || h.Author != "stagehand:rollback" || !strings.HasSuffix(h.Links[lock.HoldLinkPullRequest], "/pull/1") {
		t.Errorf("hold = %+v, %v; want stagehand:rollback's, linked to pull request 1", h, err)
	}

	// By history id: the same pull request, now naming entry 1.
	res, err := rb.Rollback(ctx, "prod", api.RollbackRequest{To: "#1", Reason: "by id", RequestedBy: "alice"})
	if err != nil || res.Action != prbot.ActionUpdated || res.Revision != c1 || res.PR != 1 {
		t.Fatalf("rollback to #1 = %+v, %v", res, err)
	}
	if _, err := rb.Rollback(ctx, "prod", api.RollbackRequest{To: "7", Reason: "x", RequestedBy: "alice"}); !errors.Is(err, api.ErrUnknownRollbackTarget) ||
		!strings.Contains(err.Error(), "unknown history entry 7 in environment prod: it holds entries 1 to 2") {
		t.Errorf("rollback to 7: %v, want an unknown target naming it", err)
	}
	if _, err := rb.Rollback(ctx, "qa", api.RollbackRequest{To: "previous", Reason: "x"}); !errors.Is(err, approval.ErrUnknownEnvironment) {
		t.Errorf("rollback of qa: %v, want an unknown environment", err)
	}
}

// A history entry whose versions never ran (rejected) or did not stay
// (failed, interrupted, rolled back) is no point to roll back to: refused
// naming the entry's result, before any pull request or hold.
func TestRollbackToAnEntryThatDidNotRun(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	web := func(tag string) string {
		return `{"services": [{"name": "web", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"
	}
	c1 := gh.Repo("acme", "manifests").Commit("main", map[string]string{
		"environments/prod/manifest.json": `{"includes": ["./web.json"]}` + "\n", "environments/prod/web.json": web("1.0.0")}, "prod")
	c2 := gh.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/web.json": web("6.6.6")}, "web 6.6.6")
	c3 := gh.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/web.json": web("3.0.0")}, "web 3")
	rest, err := github.NewClient(gh.Client()).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	bot, err := prbot.New(rest, "acme", "manifests")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	history := []approval.Entry{
		{ID: 5, Revision: c3, Result: approval.ResultSucceeded},
		{ID: 4, Revision: c2, Result: approval.ResultRolledBack},
		{ID: 3, Revision: c2, Result: approval.ResultInterrupted},
		{ID: 2, Revision: c2, Result: approval.ResultRejected},
		{ID: 1, Revision: c1, Result: approval.ResultSucceeded},
	}
	rb := newRollbacker(t, bot, svc, &fakeReconciler{history: history})
	for _, tt := range []struct{ to, result string }{{"#4", "rolled-back"}, {"3", "interrupted"}, {"2", "rejected"}} {
		_, err := rb.Rollback(ctx, "prod", api.RollbackRequest{To: tt.to, Reason: "x", RequestedBy: "alice"})
		if !errors.Is(err, api.ErrUnknownRollbackTarget) || !strings.Contains(err.Error(), "history entry "+strings.TrimPrefix(tt.to, "#")+" of prod was "+tt.result) {
			t.Errorf("rollback to %s: %v, want it refused as %s", tt.to, err, tt.result)
		}
	}
	if n := len(gh.Repo("acme", "manifests").PullRequests()); n != 0 {
		t.Errorf("%d pull requests opened", n)
	}
	if _, err := svc.Get(ctx, "apps/prod/hold"); !errors.Is(err, lock.ErrNotFound) {
		t.Errorf("hold after refusals: %v", err)
	}
	res, err := rb.Rollback(ctx, "prod", api.RollbackRequest{To: "1", Reason: "x", RequestedBy: "alice"})
	if err != nil || res.Revision != c1 || res.Action != prbot.ActionOpened {
		t.Errorf("rollback to 1 = %+v, %v; want c1's pull request opened", res, err)
	}
}

// A pin whose hold is gone (removed with `reconciler unlock`, or expired
// first) is still ended by `reconciler release`; with neither, release is
// refused as before.
func TestReleaseEndsAPinWithoutItsHold(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").Commit("main", map[string]string{"environments/prod/manifest.json": `{"services": []}` + "\n"}, "prod")
	rest, err := github.NewClient(gh.Client()).WithAuthToken(gh.Token()).WithEnterpriseURLs(gh.URL(), gh.URL())
	if err != nil {
		t.Fatal(err)
	}
	bot, err := prbot.New(rest, "acme", "manifests")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's side, kept in memory: the pin in the state and the status that shows it.
	pin := &approval.Pin{PR: 4, URL: "https://github.com/acme/manifests/pull/4", ExpiresAt: time.Now().Add(time.Hour)}
	rb := newRollbacker(t, bot, svc, &fakeReconciler{
		pin:         func(p *approval.Pin) error { pin = p; return nil },
		environment: func() *status.Environment { return &status.Environment{Pin: pin} }})
	if _, err := svc.PlaceHold(ctx, lock.NewHold("apps/prod", "alice", time.Now().Add(time.Hour), nil)); err != nil {
		t.Fatal(err)
	}
	// Someone removes the hold with the lock API: the pin stays behind.
	if _, err := svc.Unlock(ctx, "apps/prod/hold", lock.Hold, false); err != nil {
		t.Fatal(err)
	}
	res, err := rb.Release(ctx, "prod", api.ReleaseRequest{RequestedBy: "alice"})
	if err != nil || pin != nil || !strings.Contains(res.Message, "removed the pin of rollback #4") {
		t.Fatalf("release = %+v, %v; pin %+v: want the pin removed", res, err, pin)
	}
	if _, err := rb.Release(ctx, "prod", api.ReleaseRequest{RequestedBy: "alice"}); !errors.Is(err, lock.ErrNotFound) {
		t.Errorf("release with neither hold nor pin: %v, want not found", err)
	}
}

// rollback --now approves only the plan of its pin: a plan still moving a
// pinned service to the versions rolled back from (proposed by a pass that
// began before the pin was stored) is not the caller's to approve.
func TestPlansPin(t *testing.T) {
	pin := &approval.Pin{Services: []manifest.Service{{Name: "web", Containers: []manifest.Container{{DockerName: "web", DockerTag: "1.0.0"}}}}}
	plan := func(changes ...reconcile.Change) json.RawMessage {
		b, err := json.Marshal(reconcile.Plan{Environment: "prod", Changes: changes})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		plan json.RawMessage
		want bool
	}{
		{"back to the pinned tag", plan(reconcile.Change{Service: "web", Container: "app", From: "example.com/web:2.0.0", To: "example.com/web:1.0.0"}), true},
		{"pinned tag with a digest, registry with a port", plan(reconcile.Change{Service: "web", To: "registry:5000/web:1.0.0@sha256:aa"}), true},
		{"still the version rolled back from", plan(reconcile.Change{Service: "web", From: "example.com/web:1.0.0", To: "example.com/web:2.0.0"}), false},
		{"another service moves: not the pin's business", plan(reconcile.Change{Service: "api", To: "example.com/api:9"}), true},
		{"no tag at all", plan(reconcile.Change{Service: "web", To: "registry:5000/web@sha256:aa"}), false},
		{"not a plan", json.RawMessage(`"x"`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlansPin(tt.plan, pin); got != tt.want {
				t.Errorf("PlansPin = %v, want %v", got, tt.want)
			}
		})
	}
}
