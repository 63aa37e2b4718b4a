package preview

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// PlanFunc plans environment env of snapshot s against the live clusters without changing anything (the
// daemon's planner: resolve the manifest, then reconcile's Plan on the environment's targets).
type PlanFunc func(ctx context.Context, s gitsource.Snapshot, env string) (*reconcile.Plan, error)

// SourceFunc returns a read-only git source of branch of the manifests repository, with its cache in dir
// (internal/wire's Builder.BranchSource: the source's URL, credentials and transport).
type SourceFunc func(branch, dir string) (*gitsource.Source, error)

// BranchPreviewer is the Previewer of PR previews: it fetches the pull request's head branch from the
// manifests repository with a source of SourceFunc and plans every environment. Each branch has its own
// cache directory under previews/ in source.cacheDir, used by one preview at a time; RemoveCache and
// SweepCaches remove them.
type BranchPreviewer struct {
	cacheDir string
	envs     []string
	plan     PlanFunc
	source   SourceFunc

	mu    sync.Mutex
	locks map[string]*branchLock // by cache directory name
}

// branchLock serialises the users of one branch's cache; n counts them, waiting ones included.
type branchLock struct {
	mu sync.Mutex
	n  int
}

var (
	_ github.Previewer = (*BranchPreviewer)(nil)
	// What the handler's preview queue asks of a previewer that keeps a cache per branch: it removes a
	// branch's cache when its pull request closes, and sweeps caches left untouched.
	_ interface {
		RemoveCache(branch string) error
		SweepCaches(olderThan time.Duration) error
	} = (*BranchPreviewer)(nil)
)

// New previews envs of branches fetched by sources of source, planning with plan; the
// branches' caches are under previews/ in cacheDir (source.cacheDir; empty: the user's cache directory).
func New(cacheDir string, envs []string, plan PlanFunc, source SourceFunc) *BranchPreviewer {
	return &BranchPreviewer{cacheDir: cacheDir, envs: envs, plan: plan, source: source, locks: map[string]*branchLock{}}
}

// Preview fetches headRef and plans each environment of it. When the branch has moved past headSHA it
// returns nothing: the delivery for the newer head follows.
func (p *BranchPreviewer) Preview(ctx context.Context, headRef, headSHA string) ([]github.Preview, error) {
	root, err := p.cacheRoot()
	if err != nil {
		return nil, err
	}
	name := cacheName(headRef)
	unlock := p.lock(name)
	defer unlock()
	dir := filepath.Join(root, name)
	src, err := p.source(headRef, dir)
	if err != nil {
		return nil, err
	}
	snap, err := src.Poll(ctx)
	// Touched on every use, so that the age sweep only removes caches of branches no longer previewed.
	now := time.Now()
	_ = os.Chtimes(dir, now, now) // best effort: a cache that failed to appear has nothing to keep
	if err != nil {
		return nil, fmt.Errorf("fetching branch %s: %w", headRef, err)
	}
	if snap.Revision != headSHA {
		return nil, nil
	}
	out := make([]github.Preview, 0, len(p.envs))
	for _, env := range p.envs {
		plan, err := p.plan(ctx, snap, env)
		out = append(out, github.Preview{Environment: env, Plan: plan, Err: err})
	}
	return out, nil
}

// CacheDir returns the cache directory of branch's previews.
func (p *BranchPreviewer) CacheDir(branch string) (string, error) {
	root, err := p.cacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, cacheName(branch)), nil
}

// RemoveCache removes the cache of branch, after the preview using it (if any) is done.
func (p *BranchPreviewer) RemoveCache(branch string) error {
	dir, err := p.CacheDir(branch)
	if err != nil {
		return err
	}
	unlock := p.lock(filepath.Base(dir))
	defer unlock()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing preview cache of branch %s: %w", branch, err)
	}
	return nil
}

// SweepCaches removes the branch caches untouched for longer than olderThan, skipping those in use.
func (p *BranchPreviewer) SweepCaches(olderThan time.Duration) error {
	root, err := p.cacheRoot()
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing preview caches: %w", err)
	}
	var errs []error
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) <= olderThan {
			continue
		}
		if unlock, ok := p.tryLock(e.Name()); ok {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("removing stale preview cache %s: %w", e.Name(), err))
			}
			unlock()
		}
	}
	return errors.Join(errs...)
}

// cacheRoot is previews/ under source.cacheDir (or the gitsource default).
func (p *BranchPreviewer) cacheRoot() (string, error) {
	root := p.cacheDir
	if root == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache directory for previews (set source.cacheDir): %w", err)
		}
		root = filepath.Join(d, "stagehand", "git")
	}
	return filepath.Join(root, "previews"), nil
}

// cacheName names a branch's cache directory: branch names may hold slashes and dots.
func cacheName(branch string) string {
	sum := sha256.Sum256([]byte(branch))
	return hex.EncodeToString(sum[:8])
}

// lock takes the lock of cache name and returns its release.
func (p *BranchPreviewer) lock(name string) func() {
	p.mu.Lock()
	l := p.locks[name]
	if l == nil {
		l = &branchLock{}
		p.locks[name] = l
	}
	l.n++
	p.mu.Unlock()
	l.mu.Lock()
	return func() { p.release(name, l) }
}

// tryLock takes the lock of cache name unless someone holds or waits for it.
func (p *BranchPreviewer) tryLock(name string) (func(), bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.locks[name] != nil {
		return nil, false
	}
	l := &branchLock{n: 1}
	l.mu.Lock()
	p.locks[name] = l
	return func() { p.release(name, l) }, true
}

func (p *BranchPreviewer) release(name string, l *branchLock) {
	l.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.n--; l.n == 0 {
		delete(p.locks, name)
	}
}
