package remote_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
)

const (
	owner = prbottest.Owner
	repo  = prbottest.Repo
)

func newRepository(t *testing.T, f *prbottest.Fixture, opts ...remote.Option) *remote.Repository {
	t.Helper()
	r, err := remote.New(f.GH, owner, repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBranchesWrite: a branch is made to hold the base plus exactly the
// files asked for; asked again, nothing is written; a file it no longer
// should change is put back to the base's, or deleted when the base has none.
func TestBranchesWrite(t *testing.T) {
	ctx := context.Background()
	f := prbottest.New(t, map[string]string{"environments/a.json": "A", "environments/b.json": "B"})
	r := newRepository(t, f)
	b := &remote.Branches{Repo: r}
	base := f.Srv.Repo(owner, repo).Branch("main")
	const branch = "stagehand/test"

	steps := []struct {
		name        string
		files       map[string]string
		wantChanged bool
		want        map[string]string // the branch's files afterwards
	}{
		{"created with two edits", map[string]string{"environments/a.json": "A2", "environments/b.json": "B2"}, true,
			map[string]string{"environments/a.json": "A2", "environments/b.json": "B2"}},
		{"the same again writes nothing", map[string]string{"environments/a.json": "A2", "environments/b.json": "B2"}, false,
			map[string]string{"environments/a.json": "A2", "environments/b.json": "B2"}},
		{"a new file, b put back", map[string]string{"environments/a.json": "A2", "environments/c.json": "C"}, true,
			map[string]string{"environments/a.json": "A2", "environments/b.json": "B", "environments/c.json": "C"}},
		{"c deleted, the base has none", map[string]string{"environments/a.json": "A3"}, true,
			map[string]string{"environments/a.json": "A3", "environments/b.json": "B"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			files := map[string][]byte{}
			for p, c := range s.files {
				files[p] = []byte(c)
			}
			puts := f.Sent.Count("PUT", "/contents/")
			changed, err := b.Write(ctx, remote.BranchEdit{Branch: branch, BaseSHA: base, Message: s.name, Files: files})
			if err != nil {
				t.Fatal(err)
			}
			if changed != s.wantChanged {
				t.Errorf("changed = %t, want %t", changed, s.wantChanged)
			}
			if !s.wantChanged && f.Sent.Count("PUT", "/contents/") != puts {
				t.Errorf("an unchanged branch was written to")
			}
			if diff := cmp.Diff(s.want, f.Srv.Repo(owner, repo).Files(branch)); diff != "" {
				t.Errorf("files on %s (-want +got):\n%s", branch, diff)
			}
		})
	}
}

// TestPutConflict: a write over a blob that is no longer the file's is
// ErrConflict.
func TestPutConflict(t *testing.T) {
	ctx := context.Background()
	f := prbottest.New(t, map[string]string{"environments/a.json": "A"})
	r := newRepository(t, f)
	_, sha, err := r.File(ctx, "environments/a.json", "main")
	if err != nil {
		t.Fatal(err)
	}
	f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/a.json": "A by someone else"}, "race")
	_, err = (&remote.Branches{Repo: r}).Put(ctx, remote.FileEdit{Branch: "main", Path: "environments/a.json", Message: "mine", Content: []byte("A2")}, sha)
	if !errors.Is(err, remote.ErrConflict) {
		t.Fatalf("Put over a stale blob: %v, want ErrConflict", err)
	}
}

// TestSnapshot: environments/ under the root is read up front, a file
// outside it when opened, and Read lists those opened, found or not.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	f := prbottest.New(t, map[string]string{"deploy/environments/a/manifest.json": "{}", "deploy/shared/base.json": "[]"})
	r := newRepository(t, f, remote.WithRoot("/deploy/"))
	fsys, err := r.Snapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"deploy/environments/a/manifest.json": "{}", "deploy/shared/base.json": "[]"} {
		got, err := fs.ReadFile(fsys, name)
		if err != nil || string(got) != want {
			t.Errorf("reading %s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := fs.ReadFile(fsys, "deploy/shared/missing.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading a missing file: %v, want fs.ErrNotExist", err)
	}
	if diff := cmp.Diff([]string{"deploy/shared/base.json", "deploy/shared/missing.json"}, fsys.Read()); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	if got := r.Path("environments"); got != "deploy/environments" {
		t.Errorf("Path(environments) = %q under root /deploy/", got)
	}
}

func TestNew(t *testing.T) {
	gh := github.NewClient(nil)
	tests := []struct {
		name        string
		gh          *github.Client
		owner, repo string
		opts        []remote.Option
		wantErr     string
	}{
		{name: "ok", gh: gh, owner: "acme", repo: "manifests"},
		{name: "no client", owner: "acme", repo: "manifests", wantErr: "no GitHub client"},
		{name: "owner with a slash", gh: gh, owner: "acme/x", repo: "manifests", wantErr: "want OWNER/NAME"},
		{name: "no name", gh: gh, owner: "acme", wantErr: "want OWNER/NAME"},
		{name: "empty base", gh: gh, owner: "acme", repo: "manifests", opts: []remote.Option{remote.WithBase("")}, wantErr: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := remote.New(tt.gh, tt.owner, tt.repo, tt.opts...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
			case tt.wantErr == "" && r.Base() != "main":
				t.Errorf("Base() = %q, want the default main", r.Base())
			}
		})
	}
}
