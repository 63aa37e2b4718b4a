package gitserver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
)

func clone(t *testing.T, url string, auth transport.AuthMethod) (*git.Repository, error) {
	t.Helper()
	return git.CloneContext(context.Background(), memory.NewStorage(), nil, &git.CloneOptions{
		URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true,
	})
}

// files lists every path in the head commit's tree with its content
// (symlinks as "-> target").
func files(t *testing.T, r *git.Repository) map[string]string {
	t.Helper()
	ref, err := r.Head()
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatalf("tree: %v", err)
	}
	got := map[string]string{}
	err = tree.Files().ForEach(func(f *object.File) error {
		s, err := f.Contents()
		if f.Mode == filemode.Symlink {
			s = "-> " + s
		}
		got[f.Name] = s
		return err
	})
	if err != nil {
		t.Fatalf("files: %v", err)
	}
	return got
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name    string
		opts    []gitserver.Option
		auth    transport.AuthMethod
		wantErr error
	}{
		{name: "anonymous", auth: nil},
		{name: "basic", opts: []gitserver.Option{gitserver.WithBasicAuth("u", "p")}, auth: &githttp.BasicAuth{Username: "u", Password: "p"}},
		{name: "bearer", opts: []gitserver.Option{gitserver.WithBearer("tok")}, auth: &githttp.TokenAuth{Token: "tok"}},
		{name: "basic or bearer, bearer given", opts: []gitserver.Option{gitserver.WithBasicAuth("u", "p"), gitserver.WithBearer("tok")}, auth: &githttp.TokenAuth{Token: "tok"}},
		{name: "credential check", opts: []gitserver.Option{gitserver.WithCredentialCheck(func(u, p string) bool { return u == "x" && p == "dynamic" })}, auth: &githttp.BasicAuth{Username: "x", Password: "dynamic"}},
		{name: "credential check refuses", opts: []gitserver.Option{gitserver.WithCredentialCheck(func(u, p string) bool { return false })}, auth: &githttp.BasicAuth{Username: "x", Password: "dynamic"}, wantErr: transport.ErrAuthenticationRequired},
		{name: "missing credentials", opts: []gitserver.Option{gitserver.WithBasicAuth("u", "p")}, auth: nil, wantErr: transport.ErrAuthenticationRequired},
		{name: "wrong password", opts: []gitserver.Option{gitserver.WithBasicAuth("u", "p")}, auth: &githttp.BasicAuth{Username: "u", Password: "x"}, wantErr: transport.ErrAuthenticationRequired},
		{name: "wrong token", opts: []gitserver.Option{gitserver.WithBearer("tok")}, auth: &githttp.TokenAuth{Token: "nope"}, wantErr: transport.ErrAuthenticationRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t, tt.opts...)
			url := srv.Init(t, "manifests")
			want := srv.Repo("manifests").Commit(t, "main", map[string]string{"a.json": "{}"}, "first")
			r, err := clone(t, url, tt.auth)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("clone error = %v, want %v", err, tt.wantErr)
				}
				if got := srv.Requests(); got.Unauthorized == 0 || got.InfoRefs != 0 {
					t.Errorf("requests = %+v, want only unauthorized ones", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("clone: %v", err)
			}
			ref, err := r.Head()
			if err != nil {
				t.Fatal(err)
			}
			if ref.Hash().String() != want {
				t.Errorf("cloned head = %s, want %s", ref.Hash(), want)
			}
			if diff := cmp.Diff(gitserver.Counts{InfoRefs: 1, UploadPack: 1}, srv.Requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommitHelpers(t *testing.T) {
	srv := gitserver.New(t)
	url := srv.Init(t, "manifests")
	first := srv.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": `{"services":[]}`,
		"old.json":                         "old",
		"link.json":                        gitserver.Symlink("environments/devel/manifest.json"),
	}, "first")
	second := srv.Repo("manifests").Commit(t, "main", map[string]string{"old.json": gitserver.Deleted, "new.json": "new"}, "second")
	if got := srv.Head(t, "manifests", "main"); got != second {
		t.Fatalf("head = %s, want %s", got, second)
	}
	if parent := srv.Git(t, "manifests", "", "rev-parse", second+"^"); parent != first {
		t.Errorf("parent of second = %s, want %s", parent, first)
	}
	r, err := clone(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"environments/devel/manifest.json": `{"services":[]}`,
		"link.json":                        "-> environments/devel/manifest.json",
		"new.json":                         "new",
	}
	if diff := cmp.Diff(want, files(t, r)); diff != "" {
		t.Errorf("tree after second commit (-want +got):\n%s", diff)
	}

	dir := t.TempDir()
	for p, c := range map[string]string{"prod/manifest.json": "p", "devel/x.json": "x"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Files are written on top of the copied tree.
	srv.Repo("manifests").CommitDir(t, gitserver.Commit{Branch: "main", Message: "copy", Files: map[string]string{"environments/extra.json": "e"}}, dir, "environments")
	r, err = clone(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{
		"environments/prod/manifest.json": "p",
		"environments/devel/x.json":       "x",
		"environments/extra.json":         "e",
		"link.json":                       "-> environments/devel/manifest.json",
		"new.json":                        "new",
	}
	if diff := cmp.Diff(want, files(t, r)); diff != "" {
		t.Errorf("tree after CommitDir (-want +got):\n%s", diff)
	}

	rewritten := srv.Repo("manifests").ForcePush(t, gitserver.Commit{Branch: "main", Files: map[string]string{"only.json": "1"}, Message: "rewritten"})
	if out := srv.Git(t, "manifests", "", "rev-list", "--count", rewritten); out != "1" {
		t.Errorf("rewritten history has %s commits, want 1", out)
	}
	r, err = clone(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"only.json": "1"}, files(t, r)); diff != "" {
		t.Errorf("tree after ForcePush (-want +got):\n%s", diff)
	}
	srv.Reset(t, "manifests", "main", first)
	if got := srv.Head(t, "manifests", "main"); got != first {
		t.Errorf("head after Reset = %s, want %s", got, first)
	}
	if got := srv.Head(t, "manifests", "missing"); got != "" {
		t.Errorf("head of missing branch = %q, want empty", got)
	}
}

func TestPushAndStopStart(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithBasicAuth("u", "p"))
	url := srv.Init(t, "manifests")
	srv.Repo("manifests").Commit(t, "main", map[string]string{"a": "1"}, "first")
	auth := &githttp.BasicAuth{Username: "u", Password: "p"}
	dir := t.TempDir()
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("b"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.invalid"}
	h, err := wt.Commit("second", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	if err := r.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		t.Fatalf("push: %v", err)
	}
	if got := srv.Head(t, "manifests", "main"); got != h.String() {
		t.Errorf("head after push = %s, want %s", got, h)
	}
	if got := srv.Requests(); got.ReceivePack != 2 || got.UploadPack != 0 {
		t.Errorf("requests after push = %+v, want 2 receive-pack", got)
	}

	srv.Stop(t)
	if _, err := clone(t, url, auth); err == nil {
		t.Fatal("clone from a stopped server succeeded")
	}
	srv.Start(t)
	if _, err := clone(t, url, auth); err != nil {
		t.Fatalf("clone after Start: %v", err)
	}
}

func TestSSH(t *testing.T) {
	srv := gitserver.New(t)
	srv.Init(t, "manifests")
	want := srv.Repo("manifests").Commit(t, "main", map[string]string{"a": "1"}, "first")
	signer := newSigner(t)
	sshd := srv.ServeSSH(t, signer.PublicKey())

	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(sshd.KnownHosts()), 0o600); err != nil {
		t.Fatal(err)
	}
	cb, err := gitssh.NewKnownHostsCallback(kh)
	if err != nil {
		t.Fatal(err)
	}
	auth := &gitssh.PublicKeys{User: "git", Signer: signer}
	auth.HostKeyCallback = cb
	r, err := clone(t, sshd.URL("manifests"), auth)
	if err != nil {
		t.Fatalf("clone over ssh: %v", err)
	}
	ref, _ := r.Head()
	if ref.Hash().String() != want {
		t.Errorf("head = %s, want %s", ref.Hash(), want)
	}

	other := &gitssh.PublicKeys{User: "git", Signer: newSigner(t)}
	other.HostKeyCallback = cb
	if _, err := clone(t, sshd.URL("manifests"), other); err == nil {
		t.Error("clone with an unauthorized key succeeded")
	}
}

func newSigner(t *testing.T) gossh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPushPeople(t *testing.T) {
	srv := gitserver.New(t)
	srv.Init(t, "manifests")
	repo := srv.Repo("manifests")
	alice := gitserver.Person{Name: "Alice", Email: "alice@acme.example"}
	bob := gitserver.Person{Name: "Bob", Email: "bob@acme.example"}
	for _, tc := range []struct {
		name string
		c    gitserver.Commit
		want string
	}{
		{"nobody named", gitserver.Commit{Files: map[string]string{"a": "1"}},
			"Stagehand Test <test@stagehand.invalid> | Stagehand Test <test@stagehand.invalid>"},
		{"author commits", gitserver.Commit{Author: alice, Files: map[string]string{"a": "2"}},
			"Alice <alice@acme.example> | Alice <alice@acme.example>"},
		{"another committer", gitserver.Commit{Author: alice, Committer: bob, Files: map[string]string{"a": "3"}},
			"Alice <alice@acme.example> | Bob <bob@acme.example>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Branch, tc.c.Message = "main", tc.name
			sha := repo.Push(t, tc.c)
			if got := srv.Git(t, "manifests", "", "log", "-1", "--format=%an <%ae> | %cn <%ce>", sha); got != tc.want {
				t.Errorf("author | committer = %q, want %q", got, tc.want)
			}
		})
	}
}
