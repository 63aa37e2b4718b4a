package gitsource_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// sshSigner is an ed25519 key made by ssh-keygen, the way a person sets up
// git's gpg.format=ssh.
type sshSigner struct {
	keyFile string // private key; keyFile+".pub" is the public key
	allowed string // an allowed-signers line for it
}

func newSSHSigner(t testing.TB, email string) sshSigner {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed")
	}
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", email, "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return sshSigner{keyFile: key, allowed: email + ` namespaces="git" ` + strings.TrimSpace(string(pub)) + "\n"}
}

// gitPush clones url with the git CLI, writes files, commits (SSH-signed
// with key when it is not empty) and pushes to main (forced when force);
// reset, when set, first resets the clone to that commit. It returns the SHA.
func gitPush(t testing.TB, url string, files map[string]string, key, reset string) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@stagehand.invalid",
			"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@stagehand.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("clone", "-q", url, ".")
	if reset != "" {
		run("reset", "-q", "--hard", reset)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", name)
	}
	args := []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key, "commit", "-q", "-m", "change"}
	if key != "" {
		args = append(args, "-S")
	}
	run(args...)
	run("push", "-q", "--force", "origin", "HEAD:main")
	return run("rev-parse", "HEAD")
}

func TestVerifySSHSignature(t *testing.T) {
	trusted := newSSHSigner(t, "trusted@stagehand.invalid")
	stranger := newSSHSigner(t, "stranger@stagehand.invalid")
	tests := []struct {
		name    string
		key     string
		opts    func(allowed string) []gitsource.Option
		wantErr string // empty: accepted
	}{
		{name: "signed by an allowed signer", key: trusted.keyFile},
		{name: "signed by another key", key: stranger.keyFile, wantErr: "is not in the allowed signers"},
		{name: "unsigned", wantErr: "the commit is not signed"},
		{name: "SSH-signed, only an OpenPGP keyring", key: trusted.keyFile, wantErr: "no allowed signers configured",
			opts: func(string) []gitsource.Option {
				return []gitsource.Option{gitsource.WithVerifyKeyring(func() ([]byte, error) { return []byte(newSigner(t, "pgp").keyring), nil })}
			}},
		{name: "allowed for another namespace only", key: trusted.keyFile, wantErr: "is not in the allowed signers",
			opts: func(allowed string) []gitsource.Option {
				a := strings.Replace(allowed, `namespaces="git"`, `namespaces="file"`, 1)
				return []gitsource.Option{gitsource.WithAllowedSigners(func() ([]byte, error) { return []byte(a), nil })}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t)
			url, _ := seed(t, srv)
			cfg := sourceSpec(url)
			cfg.cacheDir = t.TempDir()
			allowed := "# people who may sign\n" + trusted.allowed
			if tt.opts != nil {
				cfg.opts = append(cfg.opts, tt.opts(allowed)...)
			} else {
				cfg.opts = append(cfg.opts, gitsource.WithAllowedSigners(gitsource.File(gitserver.WriteFile(t, t.TempDir(), "allowed_signers", allowed))))
			}
			head := gitPush(t, url, map[string]string{"a.json": "new"}, tt.key, "")
			s := newSource(t, cfg)
			snap, err := s.Poll(context.Background())
			if tt.wantErr == "" {
				if err != nil || snap.Revision != head {
					t.Fatalf("Poll = %s, %v; want %s accepted", snap.Revision, err, head)
				}
				return
			}
			if !errors.Is(err, gitsource.ErrUnverified) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Poll error = %v, want ErrUnverified saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestDescends(t *testing.T) {
	srv := gitserver.New(t)
	url, base := seed(t, srv)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	s := newSource(t, cfg)
	poll(t, s)
	var chain []string
	for i := range 70 { // past the first deepening step
		chain = append(chain, srv.Repo("manifests").Commit(t, "main", map[string]string{"n.json": strings.Repeat("x", i+1)}, "step"))
	}
	head := chain[len(chain)-1]
	if snap := poll(t, s); snap.Revision != head {
		t.Fatalf("poll = %s, want %s", snap.Revision, head)
	}
	// The walk reaches the shallow end of the cache and deepens it.
	if ok, err := s.Descends(context.Background(), head, base); err != nil || !ok {
		t.Fatalf("Descends(head, base 70 commits back) = %v, %v; want true", ok, err)
	}
	rewritten := gitPush(t, url, map[string]string{"r.json": "rewritten"}, "", chain[10])

	tests := []struct {
		name          string
		rev, ancestor string
		want          bool
	}{
		{name: "same revision", rev: head, ancestor: head, want: true},
		{name: "one commit forward", rev: chain[1], ancestor: chain[0], want: true},
		{name: "back to an older commit", rev: chain[10], ancestor: head, want: false},
		{name: "a rewritten branch", rev: rewritten, ancestor: head, want: false},
		{name: "the rewritten branch descends from its base", rev: rewritten, ancestor: chain[10], want: true},
	}
	if snap := poll(t, s); snap.Revision != rewritten {
		t.Fatalf("poll after force-push = %s, want %s", snap.Revision, rewritten)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Descends(context.Background(), tt.rev, tt.ancestor)
			if err != nil || got != tt.want {
				t.Errorf("Descends(%s, %s) = %v, %v; want %v", tt.rev[:8], tt.ancestor[:8], got, err, tt.want)
			}
		})
	}
	if _, err := s.Descends(context.Background(), "main", head); err == nil {
		t.Error("Descends accepted a branch name for a revision")
	}
}
