package gitsource_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// sshKey returns a new ed25519 key as an OpenSSH private key file's bytes and its public key.
func sshKey(t *testing.T) ([]byte, gossh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), sshPub
}

func TestPollSSH(t *testing.T) {
	srv := gitserver.New(t)
	_, want := seed(t, srv)
	keyPEM, pub := sshKey(t)
	sshd := srv.ServeSSH(t, pub)
	_, otherHostKey := sshKey(t)
	otherClientKey, _ := sshKey(t)

	tests := []struct {
		name       string
		key        []byte
		knownHosts string
		wantErr    string
	}{
		{name: "known host", key: keyPEM, knownHosts: sshd.KnownHosts()},
		{name: "host key mismatch", key: keyPEM, knownHosts: knownhosts.Line([]string{knownhosts.Normalize(sshd.Addr())}, otherHostKey) + "\n", wantErr: "key mismatch"},
		{name: "unknown host", key: keyPEM, knownHosts: knownhosts.Line([]string{"[example.com]:22"}, sshd.HostKey()) + "\n", wantErr: "key is unknown"},
		{name: "unauthorized client key", key: otherClientKey, knownHosts: sshd.KnownHosts(), wantErr: "unable to authenticate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			knownHosts := gitserver.WriteFile(t, dir, "known_hosts", tt.knownHosts)
			cfg := sourceSpec(sshd.URL("manifests"))
			cfg.opts = []gitsource.Option{gitsource.WithSSHKeyFile(gitserver.WriteFile(t, dir, "id", string(tt.key))), gitsource.WithKnownHostsFile(knownHosts)}
			before := sshd.Sessions()
			snap, err := newSource(t, cfg).Poll(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Poll error = %v, want one saying %q", err, tt.wantErr)
				}
				if got := sshd.Sessions() - before; got != 0 {
					t.Errorf("%d git sessions ran for a refused connection", got)
				}
				if b, _ := os.ReadFile(knownHosts); string(b) != tt.knownHosts {
					t.Errorf("known_hosts changed (trust on first use?):\n%s", b)
				}
				return
			}
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if snap.Revision != want || readFile(t, snap.FS, "environments/devel/manifest.json") != `{"services":[]}` {
				t.Errorf("snapshot = %s, want %s with the manifest", snap.Revision, want)
			}
			if got := sshd.Sessions() - before; got != 2 {
				t.Errorf("git sessions = %d, want 2 (ls-remote, fetch)", got)
			}
		})
	}
}
