package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// TestFourEyesAfterPinnedRollback: mallory's web 2.0.0 is applied (bob approved it), then rolled back in
// an incident with a pin (`rollback --now`) to 1.0.0. The pinned apply is recorded at mallory's revision but
// ran the versions of the revision rolled back to: four-eyes measures from there, so on carol's
// fix-forward (which ships web again) mallory, whose change was rolled back, is refused, and bob approves.
func TestFourEyesAfterPinnedRollback(t *testing.T) {
	h := newHarness(t, "prod")
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{ForbidAuthors: true}
	h.cfg.Environments["prod"] = e
	ctx := context.Background()
	r := h.start()
	approve := func(rev, who string) (planHash string) {
		t.Helper()
		p := r.waitPending(t, "prod", rev)
		got, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser(who))
		if err != nil || !got.Complete() {
			t.Fatalf("Approve %s by %s = %+v, %v; want complete", approval.ShortRevision(rev), who, got, err)
		}
		return p.PlanHash
	}
	applied := func(n int) []approval.Entry {
		t.Helper()
		var hist []approval.Entry
		testenv.WaitFor(t, 30*time.Second, "the apply in the history", func() bool {
			hist = r.history(t, "prod")
			return len(hist) >= n && hist[0].Result == approval.ResultSucceeded
		})
		return hist
	}
	first := h.git.Head(t, "manifests", "main")
	approve(first, "bob")
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	applied(1)

	bad := h.git.Repo("manifests").Push(t, gitserver.Commit{Branch: "main", Author: gitserver.Person{Name: "Mallory", Email: "mallory@acme.example"},
		Files: map[string]string{"environments/prod/manifest.json": manifestJSON(false, map[string]string{"web": "2.0.0"})}, Message: "web 2.0.0"})
	r.d.Source().Trigger()
	badPlan := approve(bad, "bob")
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:2.0.0")
	applied(2)

	// The incident: web goes back to 1.0.0 pinned, at mallory's revision.
	now := time.Now().UTC().Truncate(time.Second)
	pin := &approval.Pin{PR: 7, URL: "https://github.invalid/acme/manifests/pull/7", Revision: first, By: "token:alice", At: now, ExpiresAt: now.Add(time.Hour),
		Services: []manifest.Service{{Name: "web", Containers: []manifest.Container{{DockerTag: "1.0.0"}}}},
		Replaced: []manifest.Service{{Name: "web", Containers: []manifest.Container{{DockerTag: "2.0.0"}}}}}
	if err := r.d.Pin(ctx, "prod", pin); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "the pinned plan", func() bool {
		p := r.environment(t, "prod").Pending
		return p != nil && p.Revision == bad && p.PlanHash != badPlan
	})
	approve(bad, "bob")
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:1.0.0")
	if hist := applied(3); hist[0].Revision != bad || hist[0].PinnedTo != first {
		t.Fatalf("pinned apply recorded at %s pinned to %q; want at %s pinned to %s", approval.ShortRevision(hist[0].Revision), hist[0].PinnedTo, approval.ShortRevision(bad), approval.ShortRevision(first))
	}

	// carol's fix-forward ships web again: mallory's change is among what it deploys.
	fix := h.git.Repo("manifests").Push(t, gitserver.Commit{Branch: "main", Author: gitserver.Person{Name: "Carol", Email: "carol@acme.example"},
		Files: map[string]string{"environments/prod/manifest.json": manifestJSON(false, map[string]string{"web": "2.0.1"})}, Message: "web 2.0.1: the fix"})
	r.d.Source().Trigger()
	p := r.waitPending(t, "prod", fix)
	_, err := r.d.Approve(ctx, "prod", p.PlanHash, ghUser("mallory"))
	var refused *approval.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "mallory wrote or committed the commits after "+approval.ShortRevision(first)+" up to "+approval.ShortRevision(fix)) {
		t.Fatalf("Approve by mallory (her rolled-back change ships again) = %v, want a four-eyes refusal from the revision rolled back to", err)
	}
	approve(fix, "bob")
	waitImage(t, h.ns["prod"], "web", imageRepo+"web:2.0.1")
}
