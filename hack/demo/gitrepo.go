package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitRepo is a real git repository served over smart HTTP by `git
// http-backend` (fetch and push, no credentials) on loopback, with a working
// clone the demo commits from.
type gitRepo struct {
	gitPath string
	dir     string // holds repos/ (bare) and work/ (the clone)
	work    string
	URL     string
	srv     *http.Server
}

// startGitRepo creates the bare repository manifests.git under dir, serves
// it, and pushes a first commit holding examples under environments/.
func startGitRepo(ctx context.Context, dir, examples string, prepare func(environments string) error) (*gitRepo, error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("the demo needs the git CLI: %w", err)
	}
	r := &gitRepo{gitPath: gitPath, dir: dir, work: filepath.Join(dir, "work")}
	projects := filepath.Join(dir, "repos")
	bare := filepath.Join(projects, "manifests.git")
	if err := os.MkdirAll(projects, 0o755); err != nil {
		return nil, err
	}
	if _, err := r.git(ctx, dir, "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return nil, err
	}
	if _, err := r.git(ctx, bare, "config", "http.receivepack", "true"); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the git server: %w", err)
	}
	h := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + projects, "GIT_HTTP_EXPORT_ALL=1"}}
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	r.URL = "http://" + ln.Addr().String() + "/manifests.git"

	if _, err := r.git(ctx, dir, "init", "--quiet", "--initial-branch=main", r.work); err != nil {
		r.stop()
		return nil, err
	}
	if err := os.CopyFS(filepath.Join(r.work, "environments"), os.DirFS(examples)); err != nil {
		r.stop()
		return nil, fmt.Errorf("copying %s: %w", examples, err)
	}
	if err := prepare(filepath.Join(r.work, "environments")); err != nil {
		r.stop()
		return nil, err
	}
	if _, err := r.git(ctx, r.work, "remote", "add", "origin", r.URL); err != nil {
		r.stop()
		return nil, err
	}
	if _, err := r.commitAndPush(ctx, "Import examples/environments"); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

func (r *gitRepo) stop() {
	if r.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = r.srv.Shutdown(ctx)
	}
}

// git runs the git CLI in dir with a fixed identity and no user or system
// configuration, and returns its trimmed output.
func (r *gitRepo) git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.gitPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Stagehand Demo", "GIT_AUTHOR_EMAIL=demo@stagehand.invalid",
		"GIT_COMMITTER_NAME=Stagehand Demo", "GIT_COMMITTER_EMAIL=demo@stagehand.invalid")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// commitAndPush commits every change in the working clone and pushes it.
func (r *gitRepo) commitAndPush(ctx context.Context, msg string) (string, error) {
	if _, err := r.git(ctx, r.work, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := r.git(ctx, r.work, "commit", "--quiet", "-m", msg); err != nil {
		return "", err
	}
	if _, err := r.git(ctx, r.work, "push", "--quiet", "origin", "main"); err != nil {
		return "", err
	}
	return r.git(ctx, r.work, "rev-parse", "HEAD")
}

// edit replaces old with new in one file of the working clone.
func (r *gitRepo) edit(file, old, new string) error {
	path := filepath.Join(r.work, file)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(old)) {
		return fmt.Errorf("editing %s: %q not found", file, old)
	}
	return os.WriteFile(path, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o644)
}

// notifyPush sends what GitHub would send after a push: a push webhook signed
// with the shared secret.
func notifyPush(ctx context.Context, server, secret, repoURL, delivery string) error {
	body := fmt.Sprintf(`{"ref":"refs/heads/main","after":"0000000000000000000000000000000000000001","repository":{"clone_url":%q,"full_name":"acme/manifests"}}`, repoURL)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/webhook/github", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sending the push webhook: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("sending the push webhook: " + resp.Status)
	}
	return nil
}
