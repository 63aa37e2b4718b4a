package daemon

import (
	"context"
	"sync"

	"github.com/go-logr/logr"

	"github.com/stagehand-gitops/stagehand/internal/meter"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// snapshots are the newest snapshot of the git source the leader has seen,
// handed to every worker: each worker's source.
type snapshots struct {
	src     *gitsource.Source
	metrics *meter.Metrics
	envs    []string
	log     logr.Logger
	// wake wakes every worker.
	wake func()

	mu     sync.Mutex
	latest *gitsource.Snapshot
}

// Latest returns the newest snapshot the leader has seen.
func (s *snapshots) Latest() (gitsource.Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		return gitsource.Snapshot{}, false
	}
	return *s.latest, true
}

// keep makes snap the newest snapshot, without waking the workers.
func (s *snapshots) keep(snap gitsource.Snapshot) {
	s.mu.Lock()
	s.latest = &snap
	s.mu.Unlock()
	for _, name := range s.envs {
		s.metrics.ObserveRevision(name, snap.Time)
	}
}

// offer makes snap the newest snapshot and wakes every worker.
func (s *snapshots) offer(snap gitsource.Snapshot) {
	s.keep(snap)
	s.metrics.Offered(snap.Revision, s.envs)
	s.log.Info("new revision", "revision", snap.Revision, "commitTime", snap.Time)
	s.wake()
}

// Poll asks the remote for the newest revision and, when it is new, hands
// it to every worker.
func (s *snapshots) Poll(ctx context.Context) (gitsource.Snapshot, error) {
	snap, err := s.src.Poll(ctx)
	if err != nil {
		return snap, err
	}
	if cur, ok := s.Latest(); !ok || cur.Revision != snap.Revision {
		s.offer(snap)
	}
	return snap, nil
}

func (s *snapshots) At(rev string) (gitsource.Snapshot, error) { return s.src.At(rev) }

func (s *snapshots) Status() gitsource.Status { return s.src.Status() }

func (s *snapshots) Descends(ctx context.Context, rev, ancestor string) (bool, error) {
	return s.src.Descends(ctx, rev, ancestor)
}
