package gitsource_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestPollHTTPAuth(t *testing.T) {
	const token = "s3cr3t-t0ken-value"
	tests := []struct {
		name    string
		server  []gitserver.Option
		auth    config.Auth
		userURL string // user info to put in the URL
		wantErr error
	}{
		{name: "anonymous"},
		{name: "token, default user", server: []gitserver.Option{gitserver.WithBasicAuth("x-access-token", token)}, auth: config.Auth{TokenFile: "token"}},
		{name: "token with username", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", token)}, auth: config.Auth{Username: "deploy", TokenFile: "token"}},
		{name: "credentials in URL", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", token)}, userURL: "deploy:" + token},
		{name: "no credentials", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", token)}, wantErr: transport.ErrAuthenticationRequired},
		{name: "wrong token", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", "other-token-value")}, auth: config.Auth{Username: "deploy", TokenFile: "token"}, wantErr: transport.ErrAuthenticationRequired},
		{name: "wrong password in URL", server: []gitserver.Option{gitserver.WithBasicAuth("deploy", "other-token-value")}, userURL: "deploy:" + token, wantErr: transport.ErrAuthenticationRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t, tt.server...)
			url, want := seed(t, srv)
			if tt.userURL != "" {
				url = strings.Replace(url, "http://", "http://"+tt.userURL+"@", 1)
			}
			cfg := sourceConfig(url)
			cfg.Auth = tt.auth
			if cfg.Auth.TokenFile != "" {
				cfg.Auth.TokenFile = writeFile(t, t.TempDir(), "token", token+"\n")
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
	s := newSource(t, sourceConfig(url))
	poll(t, s)

	srv.ResetRequests()
	snap := poll(t, s)
	if diff := cmp.Diff(gitserver.Counts{InfoRefs: 1}, srv.Requests()); diff != "" {
		t.Errorf("requests of an unchanged poll (-want +got):\n%s", diff)
	}
	if snap.Revision != first {
		t.Errorf("revision = %s, want %s", snap.Revision, first)
	}

	second := srv.Commit(t, "manifests", "main", map[string]string{"environments/devel/manifest.json": `{"services":[{"name":"a"}]}`}, "change")
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
	cfg := sourceConfig(url)
	cfg.CacheDir = t.TempDir()
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
	s := newSource(t, sourceConfig(url))
	poll(t, s)
	srv.Commit(t, "manifests", "main", map[string]string{"b.json": "b"}, "second")
	poll(t, s)

	rewritten := srv.ForcePush(t, "manifests", "main", map[string]string{"environments/prod/manifest.json": "rewritten"}, "rewritten")
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
	s := newSource(t, sourceConfig(url))
	poll(t, s)

	srv.Commit(t, "manifests", "main", map[string]string{"b.json": "b"}, "second")
	srv.Stop(t)
	for i := 1; i <= 2; i++ {
		if _, err := s.Poll(context.Background()); err == nil {
			t.Fatal("Poll succeeded with the remote down")
		}
		st := s.Status()
		if st.Revision != first || st.Failures != i || st.LastError == "" {
			t.Errorf("status while down = %+v, want revision %s, %d failures and an error", st, first, i)
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
	if st := s.Status(); st.Failures != 0 || st.LastError != "" {
		t.Errorf("status after recovery = %+v", st)
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
			writeFile(t, dir, "config", "[[[not a git config")
		}},
		{name: "another repository's cache", corrupt: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "config"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "config", strings.Replace(string(b), "/manifests.git", "/other.git", 1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t)
			url, _ := seed(t, srv)
			cfg := sourceConfig(url)
			cfg.CacheDir = t.TempDir()
			poll(t, newSource(t, cfg))
			dirs, _ := filepath.Glob(filepath.Join(cfg.CacheDir, "*", "g*"))
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
			want := srv.Commit(t, "manifests", "main", map[string]string{"c.json": "c"}, "third")
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
	cfg := sourceConfig(url)
	cfg.Branch = "release"
	_, err := newSource(t, cfg).Poll(context.Background())
	if !errors.Is(err, gitsource.ErrBranchNotFound) {
		t.Fatalf("Poll error = %v, want ErrBranchNotFound", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  config.Source
		want string
	}{
		{name: "no url", cfg: config.Source{Branch: "main"}, want: "source.url: required"},
		{name: "bad scheme", cfg: config.Source{URL: "ftp://x/y", Branch: "main"}, want: `unsupported scheme "ftp"`},
		{name: "ssh without key", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main"}, want: "source.auth.sshKeyFile: required"},
		{name: "ssh key without known_hosts", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main", Auth: config.Auth{SSHKeyFile: "k"}}, want: "knownHostsFile: required"},
		{name: "token and ssh", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main", Auth: config.Auth{SSHKeyFile: "k", TokenFile: "t", KnownHostsFile: "h"}}, want: "use only one of"},
		{name: "bad branch", cfg: config.Source{URL: "https://example.com/x.git", Branch: "a..b"}, want: "invalid branch name"},
		{name: "bad verify", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", Verify: &config.Verify{Mode: "all"}}, want: "source.verify"},
		{name: "bad schedule", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", Schedule: "every minute"}, want: "source.schedule"},
		{name: "ca file missing", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", CAFile: "/nonexistent/ca.crt"}, want: "source.caFile: open /nonexistent/ca.crt: no such file"},
		{name: "ca file without a certificate", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", CAFile: "token"}, want: "holds no PEM certificate"},
		{name: "ca file for ssh", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main", CAFile: "ca", Auth: config.Auth{SSHKeyFile: "k", KnownHostsFile: "h"}}, want: "source.caFile: set, but ssh://git@example.com/x.git is not an https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Interval.Duration == 0 {
				tt.cfg.Interval = sourceConfig("").Interval
			}
			tt.cfg.CacheDir = t.TempDir()
			if tt.cfg.CAFile == "token" {
				tt.cfg.CAFile = writeFile(t, t.TempDir(), "token", "not a certificate\n")
			}
			_, err := gitsource.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCompactionKeepsPreviousSnapshotsReadable(t *testing.T) {
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	cfg := sourceConfig(url)
	cfg.CacheDir = t.TempDir()
	s := newSource(t, cfg, gitsource.WithMaxPacks(1))
	gens := func() []string {
		m, _ := filepath.Glob(filepath.Join(cfg.CacheDir, "*", "g*"))
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		return m
	}
	var snaps []gitsource.Snapshot
	for i := range 5 {
		srv.Commit(t, "manifests", "main", map[string]string{"n.json": fmt.Sprint(i)}, "change")
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
	s := newSource(t, sourceConfig("file://"+srv.Path("manifests")))
	if snap := poll(t, s); snap.Revision != want {
		t.Errorf("revision = %s, want %s", snap.Revision, want)
	}
	next := srv.Commit(t, "manifests", "main", map[string]string{"b.json": "b"}, "second")
	if snap := poll(t, s); snap.Revision != next || readFile(t, snap.FS, "b.json") != "b" {
		t.Errorf("revision = %s, want %s", snap.Revision, next)
	}
}

func TestAt(t *testing.T) {
	srv := gitserver.New(t)
	url, first := seed(t, srv)
	s := newSource(t, sourceConfig(url))
	poll(t, s)
	second := srv.Commit(t, "manifests", "main", map[string]string{"environments/devel/manifest.json": "v2"}, "second")
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
// trusts: refused without source.caFile, fetched with it, and the file is
// read on every poll (a rotated Secret takes effect; one that turns bad is
// an error naming the file, while the last good snapshot stays).
func TestPollHTTPSPrivateCA(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithTLS())
	url, want := seed(t, srv)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("url %s, want https", url)
	}

	_, err := newSource(t, sourceConfig(url)).Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Poll without the CA: %v, want a certificate error", err)
	}

	cfg := sourceConfig(url)
	cfg.CAFile = writeFile(t, t.TempDir(), "ca.crt", string(srv.CACert()))
	s := newSource(t, cfg)
	if snap := poll(t, s); snap.Revision != want || readFile(t, snap.FS, "environments/devel/manifest.json") != `{"services":[]}` {
		t.Fatalf("snapshot %s, want %s with the manifest", snap.Revision, want)
	}

	writeFile(t, filepath.Dir(cfg.CAFile), "ca.crt", "rotated into garbage\n")
	srv.Commit(t, "manifests", "main", map[string]string{"environments/devel/manifest.json": `{"services":[{"name":"a"}]}`}, "next")
	if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "source.caFile: "+cfg.CAFile+" holds no PEM certificate") {
		t.Fatalf("Poll with a bad CA file: %v", err)
	}
	if snap, ok := s.Latest(); !ok || snap.Revision != want {
		t.Errorf("last good snapshot %s (%v), want %s", snap.Revision, ok, want)
	}
}

// TestHTTPTransportTrustsTheCAFile: the transport other HTTPS clients of the
// same server get (the GitHub Enterprise API client of `reconciler run`)
// trusts source.caFile beside the system roots.
func TestHTTPTransportTrustsTheCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(srv.Close)
	get := func(rt http.RoundTripper) error {
		resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	plain, err := gitsource.HTTPTransport(sourceConfig(srv.URL))
	if err != nil || plain != http.DefaultTransport {
		t.Fatalf("without caFile: %v, %v; want http.DefaultTransport", plain, err)
	}
	if err := get(plain); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("GET with the system roots: %v, want a certificate error", err)
	}
	cfg := sourceConfig(srv.URL)
	cfg.CAFile = writeFile(t, t.TempDir(), "ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	rt, err := gitsource.HTTPTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(rt); err != nil {
		t.Errorf("GET trusting caFile: %v", err)
	}
}
