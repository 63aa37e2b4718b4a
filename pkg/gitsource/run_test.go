package gitsource_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 32 * time.Second},
		{7, time.Minute}, {8, time.Minute}, {200, time.Minute},
	}
	for _, tt := range tests {
		if got := gitsource.Backoff(time.Second, time.Minute, tt.failures); got != tt.want {
			t.Errorf("Backoff(1s, 1m, %d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

func TestNextDelay(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 3, 30, 0, time.UTC)
	cron := sourceSpec("https://example.com/x.git")
	cron.opts = append(cron.opts, gitsource.WithSchedule("*/5 * * * *"))
	cronSrc := newSource(t, cron)
	if got, want := gitsource.NextDelay(cronSrc, now, 0), 90*time.Second; got != want {
		t.Errorf("cron delay = %s, want %s", got, want)
	}
	if got, want := gitsource.NextDelay(cronSrc, now, 2), 10*time.Second; got != want {
		t.Errorf("delay after 2 failures = %s, want %s (backoff beats the schedule)", got, want)
	}
	interval := sourceSpec("https://example.com/x.git")
	interval.opts = append(interval.opts, gitsource.WithInterval(time.Minute))
	src := newSource(t, interval, gitsource.WithJitter(0.5))
	seen := map[bool]bool{}
	for range 50 {
		d := gitsource.NextDelay(src, now, 0)
		if d < time.Minute || d > 90*time.Second {
			t.Fatalf("interval delay = %s, want within [1m, 1m30s]", d)
		}
		seen[d == time.Minute] = true
	}
	if !seen[false] {
		t.Error("no jitter in 50 delays")
	}
}

// runner runs a Source's loop and collects the snapshots it reports.
type runner struct {
	mu    sync.Mutex
	snaps []string
	ch    chan gitsource.Snapshot
}

func run(t *testing.T, s *gitsource.Source) *runner {
	t.Helper()
	r := &runner{ch: make(chan gitsource.Snapshot, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(_ context.Context, snap gitsource.Snapshot) {
			r.mu.Lock()
			r.snaps = append(r.snaps, snap.Revision)
			r.mu.Unlock()
			r.ch <- snap
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	return r
}

func (r *runner) wait(t *testing.T, rev string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case snap := <-r.ch:
			if snap.Revision == rev {
				return
			}
		case <-timeout:
			t.Fatalf("no snapshot %s reported; got %v", rev, r.revisions())
		}
	}
}

func (r *runner) revisions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.snaps...)
}

func TestRunTriggerBurstMakesOneFetch(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.opts = append(cfg.opts, gitsource.WithInterval(time.Hour))
	const debounce = 200 * time.Millisecond
	s := newSource(t, cfg, gitsource.WithDebounce(debounce))
	r := run(t, s)
	r.wait(t, first)

	second := srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
	srv.ResetRequests()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); s.Trigger() }()
	}
	wg.Wait()
	r.wait(t, second)
	time.Sleep(2 * debounce) // room for any extra poll the burst might have caused
	// The first trigger polls at once (an ls-remote and a fetch: 2
	// info/refs, 1 upload-pack); those that came during that poll make at
	// most one more, at the end of the window, which finds the head fetched
	// (an ls-remote).
	if got := srv.Requests(); got.UploadPack != 1 || got.InfoRefs < 2 || got.InfoRefs > 3 {
		t.Errorf("requests for a burst of 50 triggers = %+v, want one fetch and at most two ls-remotes (2 or 3 info/refs, 1 upload-pack)", got)
	}
	if got := r.revisions(); len(got) != 2 {
		t.Errorf("reported revisions = %v, want [%s %s]", got, first, second)
	}
}

// TestRunTriggerAfterQuietPollsAtOnce: a push webhook's trigger is not
// held back by the debounce window when no poll began within it; one that
// comes within the window is not lost either, but polled at its end.
func TestRunTriggerAfterQuietPollsAtOnce(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.opts = append(cfg.opts, gitsource.WithInterval(time.Hour))
	const debounce = 3 * time.Second
	s := newSource(t, cfg, gitsource.WithDebounce(debounce))
	r := run(t, s)
	began := time.Now() // the first poll begins at Run's start, before this
	r.wait(t, first)
	time.Sleep(time.Until(began.Add(debounce))) // a quiet spell as long as the window

	second := srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
	start := time.Now()
	s.Trigger()
	r.wait(t, second)
	if took := time.Since(start); took >= debounce*2/3 {
		t.Errorf("a trigger after a quiet spell was polled after %s, want at once (well within the %s window)", took, debounce)
	}

	third := srv.Repo("manifests").Commit(t, "main", map[string]string{"c.json": "c"}, "third")
	start = time.Now()
	s.Trigger() // within the window of the poll that found second
	r.wait(t, third)
	if took := time.Since(start); took > debounce+2*time.Second {
		t.Errorf("a trigger within the window was polled after %s, want at the end of the %s window", took, debounce)
	}
}

func TestRunBacksOffWhileDownAndRecovers(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.opts = append(cfg.opts, gitsource.WithInterval(time.Hour))
	s := newSource(t, cfg, gitsource.WithBackoff(20*time.Millisecond, 80*time.Millisecond), gitsource.WithDebounce(0))
	r := run(t, s)
	r.wait(t, first)

	srv.Stop(t)
	s.Trigger()
	deadline := time.Now().Add(20 * time.Second)
	for s.Status().Failures < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("status = %+v, want 4 failures retried by backoff alone", s.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := s.Status()
	if st.Revision != first || st.LastError == "" {
		t.Errorf("status while down = %+v, want last good %s and an error", st, first)
	}
	if wait := time.Until(st.NextPoll); wait > 80*time.Millisecond {
		t.Errorf("next poll in %s, want at most the 80ms cap", wait)
	}

	second := srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
	srv.Start(t)
	r.wait(t, second) // no trigger: the backoff retry finds it
	if st := s.Status(); st.Failures != 0 || st.LastError != "" || st.Revision != second {
		t.Errorf("status after recovery = %+v", st)
	}
	deadline = time.Now().Add(5 * time.Second) // NextPoll is set once onChange returns
	for time.Until(s.Status().NextPoll) < 50*time.Minute {
		if time.Now().After(deadline) {
			t.Fatalf("next poll at %s after recovery, want the 1h interval", s.Status().NextPoll)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunAfterRestartDeliversCachedSnapshot(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	cfg.opts = append(cfg.opts, gitsource.WithInterval(time.Hour))
	poll(t, newSource(t, cfg))

	t.Run("remote unchanged", func(t *testing.T) {
		srv.ResetRequests()
		run(t, newSource(t, cfg)).wait(t, first)
		if got := srv.Requests(); got.UploadPack != 0 {
			t.Errorf("requests = %+v, want no fetch", got)
		}
	})
	t.Run("remote down", func(t *testing.T) {
		srv.Stop(t)
		defer srv.Start(t)
		s := newSource(t, cfg)
		run(t, s).wait(t, first)
		if st := s.Status(); st.LastError == "" || st.Revision != first {
			t.Errorf("status = %+v, want the cached revision and the error", st)
		}
	})
}
