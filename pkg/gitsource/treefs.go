package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// ErrOutsideTree is returned when a symbolic link in the tree points outside
// the repository (an absolute target or one that climbs above the root).
var ErrOutsideTree = errors.New("symbolic link points outside the repository")

const maxLinkHops = 40

// TreeFS is a read-only file system over one git tree, read straight from
// git objects (no checkout). It implements fs.FS, fs.StatFS, fs.ReadDirFS,
// fs.ReadFileFS and fs.ReadLinkFS. Open, Stat, ReadFile and ReadDir follow
// symbolic links that stay inside the tree and fail with ErrOutsideTree for
// the others; Lstat, ReadLink and ReadDir entries report links as links
// (fs.ModeSymlink), so callers can apply their own policy. Safe for concurrent use.
type TreeFS struct {
	mu      sync.Mutex
	objects storer.EncodedObjectStorer
	root    *object.Tree
	trees   map[plumbing.Hash]*object.Tree
	modTime time.Time
}

var (
	_ fs.StatFS     = (*TreeFS)(nil)
	_ fs.ReadDirFS  = (*TreeFS)(nil)
	_ fs.ReadFileFS = (*TreeFS)(nil)
	_ fs.ReadLinkFS = (*TreeFS)(nil)
)

// NewTreeFS returns a file system over tree, whose objects are read from
// objects; every file reports modTime (typically the commit time).
func NewTreeFS(objects storer.EncodedObjectStorer, tree *object.Tree, modTime time.Time) *TreeFS {
	return &TreeFS{objects: objects, root: tree, trees: map[plumbing.Hash]*object.Tree{}, modTime: modTime}
}

// node is a resolved path: the root (entry nil) or one tree entry.
type node struct {
	name  string // resolved, link-free path ("." for the root)
	entry *object.TreeEntry
}

func (n node) isDir() bool { return n.entry == nil || n.entry.Mode == filemode.Dir }

// Open opens the named file or directory, following symbolic links.
func (t *TreeFS) Open(name string) (fs.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	info := t.info(n, path.Base(name))
	if n.isDir() {
		entries, err := t.readDir(n)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &dirFile{info: info, entries: entries}, nil
	}
	b, err := t.blob(n.entry.Hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &file{info: info, r: bytes.NewReader(b)}, nil
}

// ReadFile returns the content of the named file, following symbolic links.
func (t *TreeFS) ReadFile(name string) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.resolve("read", name, true)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	b, err := t.blob(n.entry.Hash)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

// ReadDir lists the named directory sorted by name, following symbolic links
// to reach it; links inside it are listed as links.
func (t *TreeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	entries, err := t.readDir(n)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return entries, nil
}

// Stat describes the named file, following symbolic links.
func (t *TreeFS) Stat(name string) (fs.FileInfo, error) {
	return t.stat("stat", name, true)
}

// Lstat describes the named file without following a final symbolic link.
func (t *TreeFS) Lstat(name string) (fs.FileInfo, error) {
	return t.stat("lstat", name, false)
}

func (t *TreeFS) stat(op, name string, follow bool) (fs.FileInfo, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.resolve(op, name, follow)
	if err != nil {
		return nil, err
	}
	fi := t.info(n, path.Base(name))
	if err := fi.loadSize(); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fi, nil
}

// ReadLink returns the target of the named symbolic link.
func (t *TreeFS) ReadLink(name string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if n.entry == nil || n.entry.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	b, err := t.blob(n.entry.Hash)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return string(b), nil
}

// resolve walks name component by component, following symbolic links in
// directories (and in the last component when follow is set). t.mu is held.
func (t *TreeFS) resolve(op, name string, follow bool) (node, error) {
	if !fs.ValidPath(name) {
		return node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	comps := splitPath(name)
	cur, curPath := t.root, ""
	hops := 0
	for i := 0; i < len(comps); i++ {
		e := findEntry(cur, comps[i])
		if e == nil || e.Mode == filemode.Submodule { // a gitlink has no content here
			return node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		p := path.Join(curPath, comps[i])
		last := i == len(comps)-1
		if e.Mode == filemode.Symlink && (!last || follow) {
			if hops++; hops > maxLinkHops {
				return node{}, &fs.PathError{Op: op, Path: name, Err: errors.New("too many levels of symbolic links")}
			}
			b, err := t.blob(e.Hash)
			if err != nil {
				return node{}, &fs.PathError{Op: op, Path: name, Err: err}
			}
			target := string(b)
			joined := path.Join(curPath, target)
			if path.IsAbs(target) || joined == ".." || strings.HasPrefix(joined, "../") {
				return node{}, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%s -> %s: %w", p, target, ErrOutsideTree)}
			}
			comps = append(splitPath(joined), comps[i+1:]...)
			cur, curPath, i = t.root, "", -1
			continue
		}
		if last {
			return node{name: p, entry: e}, nil
		}
		if e.Mode != filemode.Dir {
			return node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		sub, err := t.tree(e.Hash)
		if err != nil {
			return node{}, &fs.PathError{Op: op, Path: name, Err: err}
		}
		cur, curPath = sub, p
	}
	return node{name: "."}, nil
}

func splitPath(p string) []string {
	if p == "." || p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func findEntry(tree *object.Tree, name string) *object.TreeEntry {
	for i := range tree.Entries {
		if tree.Entries[i].Name == name {
			return &tree.Entries[i]
		}
	}
	return nil
}

func (t *TreeFS) tree(h plumbing.Hash) (*object.Tree, error) {
	if tr, ok := t.trees[h]; ok {
		return tr, nil
	}
	tr, err := object.GetTree(t.objects, h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", h, err)
	}
	t.trees[h] = tr
	return tr, nil
}

func (t *TreeFS) blob(h plumbing.Hash) ([]byte, error) {
	o, err := t.objects.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	return b, nil
}

func (t *TreeFS) readDir(n node) ([]fs.DirEntry, error) {
	tree := t.root
	if n.entry != nil {
		var err error
		if tree, err = t.tree(n.entry.Hash); err != nil {
			return nil, err
		}
	}
	out := make([]fs.DirEntry, 0, len(tree.Entries))
	for i := range tree.Entries {
		e := &tree.Entries[i]
		if e.Mode == filemode.Submodule {
			continue // a gitlink has no content in this repository
		}
		out = append(out, t.info(node{name: path.Join(n.name, e.Name), entry: e}, e.Name))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (t *TreeFS) info(n node, base string) *fileInfo {
	if n.entry == nil {
		base = "."
	}
	return &fileInfo{fsys: t, name: base, entry: n.entry, size: -1}
}

// fileInfo is both fs.FileInfo and fs.DirEntry. Sizes of blobs are read on
// demand (Info or Stat), never for a plain ReadDir.
type fileInfo struct {
	fsys  *TreeFS
	name  string
	entry *object.TreeEntry
	size  int64
}

func (fi *fileInfo) Name() string { return fi.name }

func (fi *fileInfo) Size() int64 {
	if fi.size < 0 {
		return 0
	}
	return fi.size
}

func (fi *fileInfo) Mode() fs.FileMode {
	switch {
	case fi.entry == nil || fi.entry.Mode == filemode.Dir:
		return fs.ModeDir | 0o555
	case fi.entry.Mode == filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case fi.entry.Mode == filemode.Executable:
		return 0o555
	default:
		return 0o444
	}
}

func (fi *fileInfo) ModTime() time.Time         { return fi.fsys.modTime }
func (fi *fileInfo) IsDir() bool                { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any                   { return fi.entry }
func (fi *fileInfo) Type() fs.FileMode          { return fi.Mode().Type() }
func (fi *fileInfo) Info() (fs.FileInfo, error) { return fi.withSize() }
func (fi *fileInfo) String() string             { return fs.FormatFileInfo(fi) }

// withSize returns a copy with the size loaded, taking the lock (DirEntry.Info).
func (fi *fileInfo) withSize() (fs.FileInfo, error) {
	fi.fsys.mu.Lock()
	defer fi.fsys.mu.Unlock()
	c := *fi
	if err := c.loadSize(); err != nil {
		return nil, err
	}
	return &c, nil
}

// loadSize reads the blob size; the lock is held by the caller.
func (fi *fileInfo) loadSize() error {
	if fi.size >= 0 || fi.IsDir() {
		return nil
	}
	o, err := fi.fsys.objects.EncodedObject(plumbing.BlobObject, fi.entry.Hash)
	if err != nil {
		return fmt.Errorf("reading blob %s: %w", fi.entry.Hash, err)
	}
	fi.size = o.Size()
	return nil
}

type file struct {
	info *fileInfo
	r    *bytes.Reader
}

func (f *file) Stat() (fs.FileInfo, error) {
	c := *f.info
	c.size = f.r.Size()
	return &c, nil
}
func (f *file) Read(b []byte) (int, error)                { return f.r.Read(b) }
func (f *file) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *file) ReadAt(b []byte, off int64) (int, error)   { return f.r.ReadAt(b, off) }
func (f *file) Close() error                              { return nil }

type dirFile struct {
	info    *fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.off += n
	return rest[:n], nil
}
