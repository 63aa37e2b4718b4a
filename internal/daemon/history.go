package daemon

import (
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// resolvedManifest is envM as a history entry keeps it, with the git blob
// hash of every file it read in s. nil when envM is nil. A file whose hash
// cannot be read (it vanished from the cache) is kept with an empty hash.
func resolvedManifest(s gitsource.Snapshot, envM *manifest.Environment) *approval.Manifest {
	if envM == nil {
		return nil
	}
	m := &approval.Manifest{Root: envM.Root, Services: envM.Services, Layout: envM.Layout, Files: []approval.File{}}
	if m.Services == nil {
		m.Services = []manifest.Service{}
	}
	seen := map[string]bool{}
	envM.Layout.Walk(func(l *manifest.Layout) {
		if seen[l.File] {
			return
		}
		seen[l.File] = true
		m.Files = append(m.Files, approval.File{Path: l.File, Blob: blobHash(s.FS, l.File)})
	})
	return m
}

// blobHash is the git blob hash of name in fsys: the tree entry's when fsys
// is a git tree (pkg/gitsource's TreeFS), else computed from the content.
func blobHash(fsys fs.FS, name string) string {
	if fsys == nil {
		return ""
	}
	if fi, err := fs.Stat(fsys, name); err == nil {
		if e, ok := fi.Sys().(*object.TreeEntry); ok && e != nil {
			return e.Hash.String()
		}
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return ""
	}
	return plumbing.ComputeHash(plumbing.BlobObject, b).String()
}
