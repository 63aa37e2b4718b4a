package prbot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
)

// frozen is the reconciler's answer about a stage's deploy windows: why closed, "" open.
type frozen map[string]string

func (f frozen) Frozen(_ context.Context, env string) (string, error) { return f[env], nil }

// TestPromoteTargetFrozen: a promotion into a stage whose deploy windows are closed waits: nothing is
// opened, and a neutral check run on the base branch says so; once they open, it is opened.
func TestPromoteTargetFrozen(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline))
	freezes := frozen{"staging": "closed: inside the deny window year-end; opens Mon 4 Jan 2027 08:00 Europe/London"}
	b := f.bot(t, WithClock(func() time.Time { return now }), WithFreezes(freezes))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	const why = "stage staging is frozen: its deploy windows are closed: inside the deny window year-end; opens Mon 4 Jan 2027 08:00 Europe/London"
	if res.Action != ActionBlocked || res.Reason != why {
		t.Errorf("frozen = %+v, want blocked: %s", res, why)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Fatalf("%d pull requests opened into a frozen stage", n)
	}
	notes := blockedNotes(f)
	if len(notes) != 1 || notes[0].Conclusion != "neutral" || !strings.Contains(notes[0].Summary, "Not opening a promotion from devel to staging: "+why) {
		t.Errorf("check runs stagehand/promote-devel-staging = %+v, want one neutral run saying why", notes)
	}

	delete(freezes, "staging")
	if res, err = b.Promote(ctx, "devel", "staging", false); err != nil || res.Action != ActionOpened {
		t.Errorf("the windows open = %+v, %v; want opened", res, err)
	}
}
