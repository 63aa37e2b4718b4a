package wire_test

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func sourceConfig(t testing.TB, url string) config.Source {
	return config.Source{URL: url, Branch: "main", Root: ".", Interval: config.Duration{Duration: time.Minute}, CacheDir: t.TempDir()}
}

func newSource(t testing.TB, src config.Source, opts ...wire.Option) *gitsource.Source {
	t.Helper()
	s, err := wire.Source(src, opts...)
	if err != nil {
		t.Fatalf("Source: %v", err)
	}
	return s
}

// seed creates repo "manifests" with one commit and returns its clone URL and SHA.
func seed(t testing.TB, srv *gitserver.Server) (string, string) {
	t.Helper()
	url := srv.Init(t, "manifests")
	return url, srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": `{"services":[]}`}, "seed")
}

// TestSourceRejectsBadConfig: what reconciler.yaml can get wrong in source:
// is refused before anything runs, naming the key.
func TestSourceRejectsBadConfig(t *testing.T) {
	notPEM := gitserver.WriteFile(t, t.TempDir(), "token", "not a certificate\n")
	tests := []struct {
		name string
		cfg  config.Source
		want string
	}{
		{name: "no url", cfg: config.Source{Branch: "main"}, want: "source.url: required"},
		{name: "bad scheme", cfg: config.Source{URL: "ftp://x/y", Branch: "main"}, want: `source.url: unsupported scheme "ftp"`},
		{name: "ssh without key", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main"}, want: "source.auth.sshKeyFile: required"},
		{name: "ssh key without known_hosts", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main", Auth: config.Auth{SSHKeyFile: "k"}}, want: "source.auth.knownHostsFile: required"},
		{name: "token and ssh", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main", Auth: config.Auth{SSHKeyFile: "k", TokenFile: "t", KnownHostsFile: "h"}}, want: "source.auth: tokenFile, sshKeyFile and githubApp are mutually exclusive"},
		{name: "token and password in URL", cfg: config.Source{URL: "https://u:p4ssw0rd@example.com/x.git", Branch: "main", Auth: config.Auth{TokenFile: "t"}}, want: "use only one of"},
		{name: "bad branch", cfg: config.Source{URL: "https://example.com/x.git", Branch: "a..b"}, want: `source.branch: invalid branch name "a..b"`},
		{name: "bad verify", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", Verify: &config.Verify{Mode: "all"}}, want: "source.verify.mode"},
		{name: "bad schedule", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", Schedule: "every minute"}, want: "source.schedule"},
		{name: "ca file missing", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", CAFile: "/nonexistent/ca.crt"}, want: "source.caFile: open /nonexistent/ca.crt: no such file"},
		{name: "ca file without a certificate", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", CAFile: notPEM}, want: "source.caFile: " + notPEM + " holds no PEM certificate"},
		{name: "ca file for ssh", cfg: config.Source{URL: "ssh://git@example.com/x.git", Branch: "main", CAFile: "ca", Auth: config.Auth{SSHKeyFile: "k", KnownHostsFile: "h"}}, want: "source.caFile: set, but source.url is not an https URL"},
		{name: "github app key missing", cfg: config.Source{URL: "https://example.com/x.git", Branch: "main", Auth: config.Auth{GitHubApp: &config.GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: "/nonexistent/app.pem"}}}, want: "source.auth.githubApp: loading private key /nonexistent/app.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.CacheDir = t.TempDir()
			_, err := wire.Source(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Source error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "p4ssw0rd") {
				t.Errorf("error leaks the URL's password: %v", err)
			}
		})
	}
}

// TestSourceTokenFile: source.auth.tokenFile is read before every poll (a
// rotated Secret works without a restart), sent as source.auth.username or
// x-access-token, and never appears in errors.
func TestSourceTokenFile(t *testing.T) {
	const first, second = "first-t0ken-value", "second-t0ken-value"
	valid := first
	srv := gitserver.New(t, gitserver.WithCredentialCheck(func(user, secret string) bool { return user == "deploy" && secret == valid }))
	url, rev := seed(t, srv)
	cfg := sourceConfig(t, url)
	cfg.Auth = config.Auth{Username: "deploy", TokenFile: gitserver.WriteFile(t, t.TempDir(), "token", first+"\n")}
	s := newSource(t, cfg)
	if snap, err := s.Poll(context.Background()); err != nil || snap.Revision != rev {
		t.Fatalf("Poll = %s, %v; want %s", snap.Revision, err, rev)
	}
	valid = second
	_, err := s.Poll(context.Background())
	if !errors.Is(err, transport.ErrAuthenticationRequired) || strings.Contains(err.Error(), first) {
		t.Fatalf("Poll with a revoked token: %v, want ErrAuthenticationRequired without the token", err)
	}
	gitserver.WriteFile(t, filepath.Dir(cfg.Auth.TokenFile), "token", second+"\n")
	if _, err := s.Poll(context.Background()); err != nil {
		t.Fatalf("Poll after the token file was rotated: %v", err)
	}
	if err := os.Remove(cfg.Auth.TokenFile); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "source.auth.tokenFile: ") {
		t.Fatalf("Poll without the token file: %v, want an error naming source.auth.tokenFile", err)
	}
}

// TestSourcePrivateCA polls a git server whose certificate no system
// trusts: fetched with source.caFile, and the file is read on every poll (a
// rotated Secret takes effect; one that turns bad is an error naming the
// key and the file, while the last good snapshot stays).
func TestSourcePrivateCA(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithTLS())
	url, want := seed(t, srv)
	cfg := sourceConfig(t, url)
	cfg.CAFile = gitserver.WriteFile(t, t.TempDir(), "ca.crt", string(srv.CACert()))
	s := newSource(t, cfg)
	if snap, err := s.Poll(context.Background()); err != nil || snap.Revision != want {
		t.Fatalf("Poll = %s, %v; want %s", snap.Revision, err, want)
	}
	gitserver.WriteFile(t, filepath.Dir(cfg.CAFile), "ca.crt", "rotated into garbage\n")
	srv.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": `{"services":[{"name":"a"}]}`}, "next")
	if _, err := s.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "source.caFile: "+cfg.CAFile+" holds no PEM certificate") {
		t.Fatalf("Poll with a bad CA file: %v", err)
	}
	if snap, ok := s.Latest(); !ok || snap.Revision != want {
		t.Errorf("last good snapshot %s (%v), want %s", snap.Revision, ok, want)
	}
}

// TestSourceVerifyKeyringMissing: a keyring file that cannot be read
// refuses the signed head with an error naming source.verify.keyringFile.
func TestSourceVerifyKeyringMissing(t *testing.T) {
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	signed := pushSigned(t, url)
	cfg := sourceConfig(t, url)
	cfg.Verify = &config.Verify{Mode: "head", KeyringFile: "/nonexistent/keyring.asc"}
	_, err := newSource(t, cfg).Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "source.verify.keyringFile: open /nonexistent/keyring.asc") {
		t.Fatalf("Poll of signed %s = %v, want an error naming source.verify.keyringFile", signed, err)
	}
}

// pushSigned pushes a commit signed by a new OpenPGP key to main of url.
func pushSigned(t *testing.T, url string) string {
	t.Helper()
	key, err := openpgp.NewEntity("signer", "test", "signer@stagehand.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	gitserver.WriteFile(t, dir, "signed.json", "{}")
	if _, err := wt.Add("signed.json"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Tester", Email: "tester@stagehand.invalid", When: time.Now()}
	h, err := wt.Commit("signed", &git.CommitOptions{Author: sig, Committer: sig, SignKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.String()
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
	plain, err := wire.HTTPTransport(sourceConfig(t, srv.URL))
	if err != nil || plain != http.DefaultTransport {
		t.Fatalf("without caFile: %v, %v; want http.DefaultTransport", plain, err)
	}
	if err := get(plain); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("GET with the system roots: %v, want a certificate error", err)
	}
	cfg := sourceConfig(t, srv.URL)
	cfg.CAFile = gitserver.WriteFile(t, t.TempDir(), "ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	rt, err := wire.HTTPTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(rt); err != nil {
		t.Errorf("GET trusting caFile: %v", err)
	}
}

// installationTokenCheck accepts user x-access-token with a token the GitHub
// test server honours (issued to the app's installation and not expired).
func installationTokenCheck(gh *githubtest.Server) func(user, secret string) bool {
	return func(user, secret string) bool { return user == "x-access-token" && gh.ValidToken(secret) }
}

// TestSourceGitHubAppToken: git fetches with the App's installation token,
// kept or renewed by GitHub's clock; from a host two hours ahead or behind
// (its clock given by WithLocalClock) the first JWT, stamped on the host's
// clock, is refused and sent again on GitHub's, learnt from the refusal.
func TestSourceGitHubAppToken(t *testing.T) {
	tests := []struct {
		name       string
		host       time.Duration // this host's clock from GitHub's
		ttl        time.Duration
		wantTokens int // after two polls
		wantAsks   int // token requests, refused ones included
	}{
		{name: "token reused while valid", ttl: time.Hour, wantTokens: 1, wantAsks: 1},
		{name: "token refreshed before expiry", ttl: 30 * time.Second, wantTokens: 2, wantAsks: 2},
		{name: "host two hours ahead, token reused", host: 2 * time.Hour, ttl: time.Hour, wantTokens: 1, wantAsks: 2},
		{name: "host two hours behind, token reused", host: -2 * time.Hour, ttl: time.Hour, wantTokens: 1, wantAsks: 2},
		{name: "host two hours ahead, token refreshed before expiry", host: 2 * time.Hour, ttl: 30 * time.Second, wantTokens: 2, wantAsks: 3},
		{name: "host two hours behind, token refreshed before expiry", host: -2 * time.Hour, ttl: 30 * time.Second, wantTokens: 2, wantAsks: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := githubtest.New(t, githubtest.WithTokenTTL(tt.ttl))
			gh.CreateRepo("acme", "manifests", "main")
			srv := gitserver.New(t, gitserver.WithCredentialCheck(installationTokenCheck(gh)))
			url, first := seed(t, srv)

			cfg := sourceConfig(t, url)
			cfg.Auth.Username = "ignored-for-apps"
			cfg.Auth.GitHubApp = &config.GitHubApp{
				AppID: gh.App().ID(), InstallationID: gh.App().InstallationID(),
				PrivateKeyFile: gitserver.WriteFile(t, t.TempDir(), "app.pem", string(gh.App().PrivateKeyPEM())),
			}
			host := func() time.Time { return time.Now().Add(tt.host) }
			s := newSource(t, cfg, wire.WithGitHubAPIURL(gh.URL()), wire.WithHTTPTransport(gh.Client().Transport), wire.WithLocalClock(host))
			if snap, err := s.Poll(context.Background()); err != nil || snap.Revision != first {
				t.Fatalf("revision = %s, %v; want %s", snap.Revision, err, first)
			}
			second := srv.Repo("manifests").Commit(t, "main", map[string]string{"b.json": "b"}, "second")
			if snap, err := s.Poll(context.Background()); err != nil || snap.Revision != second {
				t.Fatalf("revision = %s, %v; want %s", snap.Revision, err, second)
			}
			if got := gh.App().TokensIssued(); got != tt.wantTokens {
				t.Errorf("installation tokens issued = %d, want %d", got, tt.wantTokens)
			}
			if got := gh.CountRequests(http.MethodPost, "/app/installations/{installation_id}/access_tokens"); got != tt.wantAsks {
				t.Errorf("token requests = %d, want %d", got, tt.wantAsks)
			}
		})
	}
}

func TestSourceGitHubAppWrongInstallation(t *testing.T) {
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	srv := gitserver.New(t, gitserver.WithCredentialCheck(installationTokenCheck(gh)))
	url, _ := seed(t, srv)
	cfg := sourceConfig(t, url)
	cfg.Auth.GitHubApp = &config.GitHubApp{
		AppID: gh.App().ID(), InstallationID: gh.App().InstallationID() + 1,
		PrivateKeyFile: gitserver.WriteFile(t, t.TempDir(), "app.pem", string(gh.App().PrivateKeyPEM())),
	}
	s := newSource(t, cfg, wire.WithGitHubAPIURL(gh.URL()))
	_, err := s.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "getting GitHub App installation token") {
		t.Fatalf("Poll with an unknown installation = %v, want a token error", err)
	}
	if got := srv.Requests(); got.InfoRefs != 0 || got.Unauthorized != 0 {
		t.Errorf("git requests = %+v, want none without a token", got)
	}
}
