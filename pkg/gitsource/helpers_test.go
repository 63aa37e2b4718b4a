package gitsource_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// spec is what a test's Source is made of; a restarted Source is another
// New of the same spec (same cache directory).
type spec struct {
	url, branch string
	cacheDir    string // default: a new temporary directory
	opts        []gitsource.Option
}

func sourceSpec(url string) spec { return spec{url: url, branch: "main"} }

func newSource(t testing.TB, sp spec, opts ...gitsource.Option) *gitsource.Source {
	t.Helper()
	if sp.cacheDir == "" {
		sp.cacheDir = t.TempDir()
	}
	all := append([]gitsource.Option{gitsource.WithCacheDir(sp.cacheDir)}, sp.opts...)
	s, err := gitsource.New(sp.url, sp.branch, append(all, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func poll(t testing.TB, s *gitsource.Source) gitsource.Snapshot {
	t.Helper()
	snap, err := s.Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return snap
}

func readFile(t testing.TB, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

// signer is an OpenPGP identity generated for a test.
type signer struct {
	entity  *openpgp.Entity
	keyring string // armored public key
}

func newSigner(t testing.TB, name string) signer {
	t.Helper()
	e, err := openpgp.NewEntity(name, "test", name+"@stagehand.invalid", nil)
	if err != nil {
		t.Fatalf("generating OpenPGP key: %v", err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return signer{entity: e, keyring: buf.String()}
}

// pushCommit clones url, writes files, commits (signed when key is not nil)
// and pushes to main, the way a person with go-git would; it returns the SHA.
func pushCommit(t testing.TB, url string, files map[string]string, key *openpgp.Entity) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "Tester", Email: "tester@stagehand.invalid", When: time.Now()}
	h, err := wt.Commit("change", &git.CommitOptions{Author: sig, Committer: sig, SignKey: key})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := r.Push(&git.PushOptions{}); err != nil {
		t.Fatalf("push: %v", err)
	}
	return h.String()
}

// seed creates repo "manifests" with one commit and returns its clone URL and SHA.
func seed(t testing.TB, srv *gitserver.Server) (string, string) {
	t.Helper()
	url := srv.Init(t, "manifests")
	sha := srv.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": `{"services":[]}`,
	}, "seed")
	return url, sha
}
