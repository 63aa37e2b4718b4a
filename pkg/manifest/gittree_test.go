package manifest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// TestGitTree resolves straight from a git commit's tree (no checkout),
// through gitsource's fs.FS, including symbolic links stored in git.
func TestGitTree(t *testing.T) {
	dir := t.TempDir()
	gitCmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	put := func(name, data string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	svc := `{"services": [{"name": "checkout-api", "containers": [{"dockerTag": "1.5.0"}]}]}`
	put("environments/devel/manifest.json", `{"skipConfirmation": true, "includes": ["./checkout-api.json", "./linked.json"]}`)
	put("environments/devel/checkout-api.json", svc)
	put("environments/shared/web.json", `{"services": [{"name": "web-frontend", "containers": [{"dockerTag": "3.0.0"}]}]}`)
	symlink("../shared/web.json", "environments/devel/linked.json")
	put("environments/evil/manifest.json", `{"includes": ["./escape.json"]}`)
	symlink("../../../../etc/hostname", "environments/evil/escape.json")
	gitCmd("init", "-q", "-b", "main")
	gitCmd("add", ".")
	gitCmd("commit", "-q", "-m", "manifests")

	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	fsys := gitsource.NewTreeFS(repo.Storer, tree, time.Now())

	envs, err := manifest.Environments(fsys, ".")
	if err != nil || strings.Join(envs, ",") != "devel,evil" {
		t.Fatalf("Environments = %v, %v", envs, err)
	}
	env, err := manifest.Resolve(t.Context(), manifest.Repo{FS: fsys, Root: "."}, "devel")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range env.Services {
		got = append(got, s.Name+"@"+s.Source)
	}
	if want := "checkout-api@environments/devel/checkout-api.json,web-frontend@environments/shared/web.json"; strings.Join(got, ",") != want || !env.SkipConfirmation {
		t.Errorf("services = %v, skip = %v", got, env.SkipConfirmation)
	}
	_, err = manifest.Resolve(t.Context(), manifest.Repo{FS: fsys, Root: "."}, "evil")
	var l *manifest.ErrorList
	if !errors.As(err, &l) || len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Message, "symbolic link points outside the repository") {
		t.Errorf("escape through a git symlink: %v", err)
	}
}
