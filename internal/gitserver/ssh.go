package gitserver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the Server's repositories over SSH (git-upload-pack only).
type SSHServer struct {
	git     *Server
	addr    string
	hostKey gossh.PublicKey

	mu       sync.Mutex
	sessions int
}

// ServeSSH starts an SSH front end on loopback that accepts only the given
// client public key and runs git-upload-pack for each session. It is closed
// at test cleanup.
func (s *Server) ServeSSH(t testing.TB, authorized gossh.PublicKey) *SSHServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("gitserver: generating host key: %v", err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("gitserver: host key signer: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gitserver: ssh listen: %v", err)
	}
	ss := &SSHServer{git: s, addr: l.Addr().String(), hostKey: signer.PublicKey()}
	want := authorized.Marshal()
	srv := &gliderssh.Server{
		Handler: ss.handle,
		PublicKeyHandler: func(_ gliderssh.Context, key gliderssh.PublicKey) bool {
			return bytes.Equal(key.Marshal(), want)
		},
	}
	srv.AddHostKey(signer)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ss
}

// URL is the ssh:// clone URL of the named repository.
func (ss *SSHServer) URL(name string) string {
	return "ssh://git@" + ss.addr + "/" + name + ".git"
}

// Addr is the host:port the server listens on.
func (ss *SSHServer) Addr() string { return ss.addr }

// HostKey is the server's public host key.
func (ss *SSHServer) HostKey() gossh.PublicKey { return ss.hostKey }

// KnownHosts returns a known_hosts line for the server's host key.
func (ss *SSHServer) KnownHosts() string {
	return knownhosts.Line([]string{knownhosts.Normalize(ss.addr)}, ss.hostKey) + "\n"
}

// Sessions is the number of git sessions served.
func (ss *SSHServer) Sessions() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.sessions
}

func (ss *SSHServer) handle(sess gliderssh.Session) {
	repo, err := ss.repoPath(sess.Command())
	if err != nil {
		fmt.Fprintf(sess.Stderr(), "gitserver: %v\n", err)
		_ = sess.Exit(128)
		return
	}
	ss.mu.Lock()
	ss.sessions++
	ss.mu.Unlock()
	cmd := exec.Command(ss.git.gitPath, "upload-pack", repo)
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + ss.git.root}
	for _, e := range sess.Environ() {
		if strings.HasPrefix(e, "GIT_PROTOCOL=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sess, sess, sess.Stderr()
	code := 0
	if err := cmd.Run(); err != nil {
		code = 1
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
	}
	_ = sess.Exit(code)
}

// repoPath maps `git-upload-pack '/name.git'` to the repository directory.
func (ss *SSHServer) repoPath(args []string) (string, error) {
	if len(args) == 1 {
		args = strings.Fields(args[0])
	}
	if len(args) != 2 || args[0] != "git-upload-pack" {
		return "", fmt.Errorf("only git-upload-pack is served, got %q", strings.Join(args, " "))
	}
	p := strings.Trim(args[1], `'"`)
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	return ss.git.root + "/" + p, nil
}
