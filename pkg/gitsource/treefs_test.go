package gitsource_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func treeSnapshot(t *testing.T, files map[string]string) gitsource.Snapshot {
	t.Helper()
	srv := gitserver.New(t)
	url := srv.Init(t, "manifests")
	srv.Repo("manifests").Commit(t, "main", files, "tree")
	return poll(t, newSource(t, sourceSpec(url)))
}

func TestTreeFSPassesFSTest(t *testing.T) {
	snap := treeSnapshot(t, map[string]string{
		"environments/devel/manifest.json":  `{"includes":["../common/base.json"]}`,
		"environments/common/base.json":     `{"services":[]}`,
		"environments/prod/manifest.json":   gitserver.Symlink("../devel/manifest.json"),
		"environments/staging":              gitserver.Symlink("devel"),
		"README.md":                         "hello",
		"deep/a/b/c/d.txt":                  "d",
		"environments/devel/empty-file.txt": "",
	})
	if err := fstest.TestFS(snap.FS,
		"README.md", "deep/a/b/c/d.txt", "environments/devel/manifest.json",
		"environments/common/base.json", "environments/prod/manifest.json",
		"environments/devel/empty-file.txt",
	); err != nil {
		t.Fatal(err)
	}
}

func TestTreeFSSymlinks(t *testing.T) {
	snap := treeSnapshot(t, map[string]string{
		"environments/devel/manifest.json": "devel",
		"environments/prod/manifest.json":  gitserver.Symlink("../devel/manifest.json"),
		"environments/staging":             gitserver.Symlink("devel"),
		"escape-absolute":                  gitserver.Symlink("/etc/passwd"),
		"escape-relative":                  gitserver.Symlink("../outside"),
		"environments/escape-dir":          gitserver.Symlink("../../.."),
		"loop-a":                           gitserver.Symlink("loop-b"),
		"loop-b":                           gitserver.Symlink("loop-a"),
	})
	fsys := snap.FS

	// Links are reported as links.
	entries, err := fs.ReadDir(fsys, "environments")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]fs.FileMode{}
	for _, e := range entries {
		types[e.Name()] = e.Type()
	}
	want := map[string]fs.FileMode{"devel": fs.ModeDir, "prod": fs.ModeDir, "staging": fs.ModeSymlink, "escape-dir": fs.ModeSymlink}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("entry types (-want +got):\n%s", diff)
	}
	fi, err := fs.Lstat(fsys, "environments/prod/manifest.json")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat of a link = %v, %v; want a symlink", fi, err)
	}
	if target, err := fs.ReadLink(fsys, "environments/prod/manifest.json"); err != nil || target != "../devel/manifest.json" {
		t.Errorf("ReadLink = %q, %v", target, err)
	}
	if _, err := fs.ReadLink(fsys, "environments/devel/manifest.json"); err == nil {
		t.Error("ReadLink of a regular file succeeded")
	}

	// Links inside the tree are followed.
	for _, name := range []string{"environments/prod/manifest.json", "environments/staging/manifest.json"} {
		if got := readFile(t, fsys, name); got != "devel" {
			t.Errorf("%s = %q, want devel", name, got)
		}
	}

	// Links leaving the tree are refused.
	for _, name := range []string{"escape-absolute", "escape-relative", "environments/escape-dir", "environments/escape-dir/etc/passwd"} {
		if _, err := fs.ReadFile(fsys, name); !errors.Is(err, gitsource.ErrOutsideTree) {
			t.Errorf("ReadFile(%s) error = %v, want ErrOutsideTree", name, err)
		}
		if _, err := fs.Stat(fsys, name); !errors.Is(err, gitsource.ErrOutsideTree) {
			t.Errorf("Stat(%s) error = %v, want ErrOutsideTree", name, err)
		}
	}
	if _, err := fs.ReadFile(fsys, "loop-a"); err == nil {
		t.Error("reading a link loop succeeded")
	}

	for _, name := range []string{"missing.json", "environments/devel/manifest.json/x", "../x", "/abs"} {
		if _, err := fsys.Open(name); err == nil {
			t.Errorf("Open(%q) succeeded", name)
		}
	}
}

func TestTreeFSHidesSubmodules(t *testing.T) {
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	srv.Git(t, "manifests", "commit refs/heads/main\ncommitter T <t@stagehand.invalid> 1700000000 +0000\ndata 9\nsubmodule\nfrom refs/heads/main^0\n"+
		"M 160000 "+strings.Repeat("ab", 20)+" vendor/lib\nM 100644 inline vendor/README\ndata 2\nhi\n\n", "fast-import", "--quiet")
	snap := poll(t, newSource(t, sourceSpec(url)))
	entries, err := fs.ReadDir(snap.FS, "vendor")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"README"}, names); diff != "" {
		t.Errorf("vendor entries (-want +got):\n%s", diff)
	}
	if _, err := fs.Stat(snap.FS, "vendor/lib"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a submodule: %v, want ErrNotExist", err)
	}
}
