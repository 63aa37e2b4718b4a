package gitsource_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestPollHTTPAuth(t *testing.T) {
	const token = "s3cr3t-t0ken-value"
	tests := []struct {
		name    string
		server  []gitserver.Option
		user    string // WithUsername
		token   bool   // WithTokenSource giving the token
		userURL string // user info to put in the URL
		wantErr error
	}{
		{name: "anonymous"},
		{name: "token, default user", server: []gitserver.Option{gitserver.WithBasicAuth("x-access-token", token)}, token: true},
		{name: "token with username", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", token)}, user: "deploy", token: true},
		{name: "credentials in URL", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", token)}, userURL: "deploy:" + token},
		{name: "no credentials", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", token)}, wantErr: transport.ErrAuthenticationRequired},
		{name: "wrong token", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", "other-token-value")}, user: "deploy", token: true, wantErr: transport.ErrAuthenticationRequired},
		{name: "wrong password in URL", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", "other-token-value")}, userURL: "deploy:" + token, wantErr: transport.ErrAuthenticationRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t, tt.server...)
			url, want := seed(t, srv)
			if tt.userURL != "" {
				url = strings.Replace(url, "http://", "http://"+tt.userURL+"@", 1)
			}
			cfg := sourceSpec(url)
			if tt.user != "" {
				cfg.opts = append(cfg.opts, gitsource.WithUsername(tt.user))
			}
			if tt.token {
				cfg.opts = append(cfg.opts, gitsource.WithTokenSource(func(context.Context) (string, error) { return token, nil }))
			}
			s := newSource(t, cfg)
			snap, err := s.Poll(context.Background())
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Poll error = %v, want %v", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("error leaks the token: %v", err)
				}
				if st := s.Status(); st.LastError == "" || st.Revision != "" || strings.Contains(st.LastError, token) || strings.Contains(st.URL, token) {
					t.Errorf("status after failure = %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if snap.Revision != want {
				t.Errorf("revision = %s, want %s", snap.Revision, want)
			}
			if got := readFile(t, snap.FS, "environments/devel/manifest.json"); got != `{"services":[]}` {
				t.Errorf("manifest = %q", got)
			}
			if st := s.Status(); strings.Contains(st.URL, token) {
				t.Errorf("status URL leaks the token: %s", st.URL)
			}
		})
	}
}

func TestNoChangePollMakesOneLsRemoteAndNoFetch(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	s := newSource(t, sourceSpec(url))
	poll(t, s)

	srv.ResetRequests()
	snap := poll(t, s)
	if diff := cmp.Diff(gitserver.Counts{InfoRefs: 1}, srv.Requests()); diff != "" {
		t.Errorf("requests of an unchanged poll (-want +got):\n%s", diff)
	}
	if snap.Revision != first {
		t.Errorf("revision = %s, want %s", snap.Revision, first)
	}

	second := srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": `{"services":[{"name":"a"}]}`}, "change")
	srv.ResetRequests()
	snap = poll(t, s)
	if got := srv.Requests(); got.UploadPack != 1 {
		t.Errorf("requests of a changed poll = %+v, want one upload-pack", got)
	}
	if snap.Revision != second {
		t.Errorf("revision = %s, want %s", snap.Revision, second)
	}
	if got := readFile(t, snap.FS, "environments/devel/manifest.json"); got != `{"services":[{"name":"a"}]}` {
		t.Errorf("manifest = %q", got)
	}
}

func TestRestartKeepsCacheAndFetchesNothing(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	poll(t, newSource(t, cfg))

	srv.ResetRequests()
	restarted := newSource(t, cfg)
	if snap, ok := restarted.Latest(); ok {
		t.Errorf("Latest before the first poll = %s, want none", snap.Revision)
	}
	snap := poll(t, restarted)
	if snap.Revision != first {
		t.Errorf("revision after restart = %s, want %s", snap.Revision, first)
	}
	if diff := cmp.Diff(gitserver.Counts{InfoRefs: 1}, srv.Requests()); diff != "" {
		t.Errorf("requests after restart (-want +got):\n%s", diff)
	}
}

func TestForcePush(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	s := newSource(t, sourceSpec(url))
	poll(t, s)
	srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
	poll(t, s)

	rewritten := srv.Repo("manifests").ForcePush(t, gitserver.Commit{Branch: "main", Files: map[string]string{"environments/prod/manifest.json": "rewritten"}, Message: "rewritten"})
	snap := poll(t, s)
	if snap.Revision != rewritten {
		t.Fatalf("revision after force-push = %s, want %s", snap.Revision, rewritten)
	}
	if got := readFile(t, snap.FS, "environments/prod/manifest.json"); got != "rewritten" {
		t.Errorf("manifest = %q", got)
	}
	if _, err := snap.FS.Open("b.json"); err == nil {
		t.Error("b.json from the old history is visible in the rewritten tree")
	}

	srv.Reset(t, "manifests", "main", first) // back to an older commit
	if snap := poll(t, s); snap.Revision != first {
		t.Errorf("revision after reset to the first commit = %s, want %s", snap.Revision, first)
	}
}

func TestRemoteDownKeepsLastGoodAndRecovers(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	s := newSource(t, sourceSpec(url))
	poll(t, s)

	srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
	srv.Stop(t)
	down := time.Now()
	var since time.Time
	for i := 1; i <= 2; i++ {
		if _, err := s.Poll(context.Background()); err == nil {
			t.Fatal("Poll succeeded with the remote down")
		}
		st := s.Status()
		if st.Revision != first || st.Failures != i || st.Errors != i || st.LastError == "" {
			t.Errorf("status while down = %+v, want revision %s, %d failures and errors and an error", st, first, i)
		}
		if i == 1 {
			since = st.FailingSince
		}
		if st.FailingSince.Before(down) || !st.FailingSince.Equal(since) {
			t.Errorf("failing since %v after %d failures, want the first failure's time (after %v)", st.FailingSince, i, down)
		}
	}
	if snap, ok := s.Latest(); !ok || snap.Revision != first || readFile(t, snap.FS, "environments/devel/manifest.json") == "" {
		t.Errorf("Latest while down = %s, %v; want %s", snap.Revision, ok, first)
	}

	srv.Start(t)
	snap := poll(t, s)
	if want := srv.Head(t, "manifests", "main"); snap.Revision != want {
		t.Errorf("revision after recovery = %s, want %s", snap.Revision, want)
	}
	if st := s.Status(); st.Failures != 0 || st.LastError != "" || !st.FailingSince.IsZero() || st.Errors != 2 {
		t.Errorf("status after recovery = %+v, want no failures, failing since zero, 2 errors in all", st)
	}
}

func TestCorruptCache(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
	}{
		{name: "pack files overwritten", corrupt: func(t *testing.T, dir string) {
			packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*"))
			if len(packs) == 0 {
				t.Fatal("no pack files in the cache")
			}
			for _, p := range packs {
				if err := os.WriteFile(p, []byte("garbage"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "objects removed", corrupt: func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "objects")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "config garbage", corrupt: func(t *testing.T, dir string) {
			gitserver.WriteFile(t, dir, "config", "[[[not a git config")
		}},
		{name: "another repository's cache", corrupt: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "config"))
			if err != nil {
				t.Fatal(err)
			}
			gitserver.WriteFile(t, dir, "config", strings.Replace(string(b), "/manifests.git", "/other.git", 1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t)
			url, _ := seed(t, srv)
			cfg := sourceSpec(url)
			cfg.cacheDir = t.TempDir()
			poll(t, newSource(t, cfg))
			dirs, _ := filepath.Glob(filepath.Join(cfg.cacheDir, "*", "g*"))
			if len(dirs) != 1 {
				t.Fatalf("cache dirs = %v, want one", dirs)
			}
			tt.corrupt(t, dirs[0])

			// After a restart.
			srv.ResetRequests()
			restarted := newSource(t, cfg)
			snap := poll(t, restarted)
			if want := srv.Head(t, "manifests", "main"); snap.Revision != want {
				t.Errorf("revision = %s, want %s", snap.Revision, want)
			}
			if got := srv.Requests(); got.UploadPack != 1 {
				t.Errorf("requests = %+v, want a fresh fetch", got)
			}
			if got := readFile(t, snap.FS, "environments/devel/manifest.json"); got != `{"services":[]}` {
				t.Errorf("manifest = %q", got)
			}

			// While running, noticed at the next change.
			tt.corrupt(t, dirs[0])
			want := srv.Repo("manifests").Commit(t, "main", map[string]string{"c.json": "c"}, "third")
			snap = poll(t, restarted)
			if snap.Revision != want {
				t.Errorf("revision after corruption while running = %s, want %s", snap.Revision, want)
			}
			if got := readFile(t, snap.FS, "c.json"); got != "c" {
				t.Errorf("c.json = %q", got)
			}
		})
	}
}

func TestBranchNotFound(t *testing.T) {
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.branch = "release"
	_, err := newSource(t, cfg).Poll(context.Background())
	if !errors.Is(err, gitsource.ErrBranchNotFound) {
		t.Fatalf("Poll error = %v, want ErrBranchNotFound", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	notPEM := gitserver.WriteFile(t, t.TempDir(), "token", "not a certificate\n")
	token := gitsource.WithTokenSource(func(context.Context) (string, error) { return "t0ken", nil })
	sshKey := []gitsource.Option{gitsource.WithSSHKeyFile("k"), gitsource.WithKnownHostsFile("h")}
	tests := []struct {
		name        string
		url, branch string
		opts        []gitsource.Option
		want        string
	}{
		{name: "no url", branch: "main", want: "url: required"},
		{name: "bad scheme", url: "ftp://x/y", branch: "main", want: `unsupported scheme "ftp"`},
		{name: "ssh without key", url: "ssh://git@example.com/x.git", branch: "main", want: "SSH key: required for ssh URL ssh://git@example.com/x.git"},
		{name: "ssh key without known_hosts", url: "ssh://git@example.com/x.git", branch: "main", opts: []gitsource.Option{gitsource.WithSSHKeyFile("k")}, want: "known_hosts file: required"},
		{name: "ssh key for https", url: "https://example.com/x.git", branch: "main", opts: sshKey, want: "SSH key: set, but https://example.com/x.git is not an ssh URL"},
		{name: "token and ssh", url: "ssh://git@example.com/x.git", branch: "main", opts: append([]gitsource.Option{token}, sshKey...), want: "use only one of"},
		{name: "token and password in URL", url: "https://u:p4ssw0rd@example.com/x.git", branch: "main", opts: []gitsource.Option{token}, want: "use only one of"},
		{name: "no branch", url: "https://example.com/x.git", want: "branch: required"},
		{name: "bad branch", url: "https://example.com/x.git", branch: "a..b", want: "invalid branch name"},
		{name: "bad schedule", url: "https://example.com/x.git", branch: "main", opts: []gitsource.Option{gitsource.WithSchedule("every minute")}, want: `schedule: invalid cron expression "every minute"`},
		{name: "bad interval", url: "https://example.com/x.git", branch: "main", opts: []gitsource.Option{gitsource.WithInterval(0)}, want: "interval 0s: must be positive"},
		{name: "nil token source", url: "https://example.com/x.git", branch: "main", opts: []gitsource.Option{gitsource.WithTokenSource(nil)}, want: "token source: nil"},
		{name: "ca bundle missing", url: "https://example.com/x.git", branch: "main", opts: []gitsource.Option{gitsource.WithCABundle(gitsource.File("/nonexistent/ca.crt"))}, want: "open /nonexistent/ca.crt: no such file"},
		{name: "ca bundle without a certificate", url: "https://example.com/x.git", branch: "main", opts: []gitsource.Option{gitsource.WithCABundle(gitsource.File(notPEM))}, want: "holds no PEM certificate"},
		{name: "ca bundle for ssh", url: "ssh://git@example.com/x.git", branch: "main", opts: append([]gitsource.Option{gitsource.WithCABundle(gitsource.File(notPEM))}, sshKey...), want: "CA bundle: set, but ssh://git@example.com/x.git is not an https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gitsource.New(tt.url, tt.branch, append(tt.opts, gitsource.WithCacheDir(t.TempDir()))...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "p4ssw0rd") {
				t.Errorf("error leaks the URL's password: %v", err)
			}
		})
	}
}

func TestCompactionKeepsPreviousSnapshotsReadable(t *testing.T) {
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg, gitsource.WithMaxPacks(1))
	gens := func() []string {
		m, _ := filepath.Glob(filepath.Join(cfg.cacheDir, "*", "g*"))
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		return m
	}
	var snaps []gitsource.Snapshot
	for i := range 5 {
		srv.Repo("manifests").Commit(t, "main", map[string]string{"n.json": fmt.Sprint(i)}, "change")
		snaps = append(snaps, poll(t, s))
	}
	// Polls 1-2 fill g1 with two packs; 3 starts g2, 4 adds a pack, 5 starts g3 and removes g1.
	if diff := cmp.Diff([]string{"g2", "g3"}, gens()); diff != "" {
		t.Errorf("cache generations (-want +got):\n%s", diff)
	}
	for i := 2; i < 5; i++ { // snapshots in g2 and g3 are still readable
		if got := readFile(t, snaps[i].FS, "n.json"); got != fmt.Sprint(i) {
			t.Errorf("snapshot %d: n.json = %q", i, got)
		}
	}
	restarted := newSource(t, cfg)
	srv.ResetRequests()
	if snap := poll(t, restarted); snap.Revision != snaps[4].Revision {
		t.Errorf("revision after restart = %s, want %s", snap.Revision, snaps[4].Revision)
	}
	if got := srv.Requests(); got.UploadPack != 0 {
		t.Errorf("restart fetched again: %+v", got)
	}
	if diff := cmp.Diff([]string{"g3"}, gens()); diff != "" {
		t.Errorf("cache generations after restart (-want +got):\n%s", diff)
	}
}

func TestPollFileURL(t *testing.T) {
	srv := gitserver.New(t)
	_, want := seed(t, srv)
	s := newSource(t, sourceSpec("file://"+srv.Path("manifests")))
	if snap := poll(t, s); snap.Revision != want {
		t.Errorf("revision = %s, want %s", snap.Revision, want)
	}
	next := srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
	if snap := poll(t, s); snap.Revision != next || readFile(t, snap.FS, "b.json") != "b" {
		t.Errorf("revision = %s, want %s", snap.Revision, next)
	}
}

func TestAt(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	s := newSource(t, sourceSpec(url))
	poll(t, s)
	second := srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": "v2"}, "second")
	poll(t, s)

	srv.Stop(t) // no network needed
	for rev, want := range map[string]string{first: `{"services":[]}`, second: "v2"} {
		snap, err := s.At(rev)
		if err != nil {
			t.Fatalf("At(%s): %v", rev, err)
		}
		if got := readFile(t, snap.FS, "environments/devel/manifest.json"); snap.Revision != rev || got != want {
			t.Errorf("At(%s) = %s with %q, want %q", rev, snap.Revision, got, want)
		}
	}
	if _, err := s.At(strings.Repeat("1", 40)); !errors.Is(err, gitsource.ErrRevisionNotCached) {
		t.Errorf("At(unknown) error = %v, want ErrRevisionNotCached", err)
	}
	if _, err := s.At("main"); err == nil {
		t.Error("At(main) succeeded; only SHAs are accepted")
	}
}

// TestPollHTTPSPrivateCA polls a git server whose certificate no system
// trusts: refused without a CA bundle, fetched with it, and the bundle is
// read on every poll (a rotated Secret takes effect; one that turns bad is
// an error, while the last good snapshot stays).
func TestPollHTTPSPrivateCA(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithTLS())
	url, want := seed(t, srv)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("url %s, want https", url)
	}

	_, err := newSource(t, sourceSpec(url)).Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Poll without the CA: %v, want a certificate error", err)
	}

	caFile := gitserver.WriteFile(t, t.TempDir(), "ca.crt", string(srv.CACert()))
	s := newSource(t, sourceSpec(url), gitsource.WithCABundle(gitsource.File(caFile)))
	if snap := poll(t, s); snap.Revision != want || readFile(t, snap.FS, "environments/devel/manifest.json") != `{"services":[]}` {
		t.Fatalf("snapshot %s, want %s with the manifest", snap.Revision, want)
	}

	gitserver.WriteFile(t, filepath.Dir(caFile), "ca.crt", "rotated into garbage\n")
	srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": `{"services":[{"name":"a"}]}`}, "next")
	if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "CA bundle: holds no PEM certificate") {
		t.Fatalf("Poll with a bad CA bundle: %v", err)
	}
	if snap, ok := s.Latest(); !ok || snap.Revision != want {
		t.Errorf("last good snapshot %s (%v), want %s", snap.Revision, ok, want)
	}
}
