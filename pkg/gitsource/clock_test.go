package gitsource_test

import (
	"context"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// TestStatusTimesOnTheGivenClock: the times Status reports come from
// WithClock's clock (the reconciler gives the API server's), fetched and
// checked after a poll, failing since after a failed one.
func TestStatusTimesOnTheGivenClock(t *testing.T) {
	const off = -2 * time.Hour
	now := func() time.Time { return time.Now().Add(off) }
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	s := newSource(t, sourceSpec(url), gitsource.WithClock(now))
	near := func(what string, at time.Time) {
		t.Helper()
		if d := at.Sub(now()); d < -5*time.Second || d > time.Second {
			t.Errorf("%s = %s, %s from the given clock's now", what, at, d)
		}
	}
	poll(t, s)
	st := s.Status()
	near("fetched", st.FetchedAt)
	near("checked", st.CheckedAt)
	srv.Stop(t)
	if _, err := s.Poll(context.Background()); err == nil {
		t.Fatal("Poll succeeded with the remote down")
	}
	near("failing since", s.Status().FailingSince)
	srv.Start(t)
}
