package gitsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	objcache "github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// lastGoodRef records the last accepted revision in the cache so that it
// survives a restart even when the branch head is refused.
const lastGoodRef = plumbing.ReferenceName("refs/stagehand/last-good")

// cache is the persistent bare repository one Source fetches into. It lives
// in generation directories <root>/<key>/g<N>: compaction starts generation
// N+1 and keeps N, so snapshots handed out before still read their objects;
// older generations are removed.
type cache struct {
	base    string // <root>/<key>
	gen     int
	dir     string // base/g<gen>
	url     string
	refspec gitconfig.RefSpec
	branch  plumbing.ReferenceName
	repo    *git.Repository
}

func newCache(root, url, branch string) *cache {
	sum := sha256.Sum256([]byte(url + "\x00" + branch))
	return &cache{
		base:    filepath.Join(root, hex.EncodeToString(sum[:8])),
		url:     url,
		branch:  plumbing.NewBranchReferenceName(branch),
		refspec: gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/heads/%s", branch, branch)),
	}
}

// open opens the cache, checking that it is a readable bare repository for
// this URL and branch whose recorded commits are complete; anything else is
// wiped and initialised afresh. Generations older than the newest are
// removed: after a restart no snapshot reads them.
func (c *cache) open() error {
	if c.repo != nil {
		return nil
	}
	gens := c.generations()
	if len(gens) == 0 {
		c.setGen(1)
		return c.reset()
	}
	for _, g := range gens[:len(gens)-1] {
		_ = os.RemoveAll(c.genDir(g)) // best effort: a leftover is retried next start
	}
	c.setGen(gens[len(gens)-1])
	if err := c.check(); err == nil {
		return nil
	}
	// Corrupt or someone else's cache: start over.
	return c.reset()
}

// compact starts a new generation (one pack after the next fetch) and
// removes all but the current one.
func (c *cache) compact() error {
	for _, g := range c.generations() {
		if g < c.gen {
			_ = os.RemoveAll(c.genDir(g))
		}
	}
	c.setGen(c.gen + 1)
	return c.reset()
}

func (c *cache) genDir(g int) string { return filepath.Join(c.base, fmt.Sprintf("g%d", g)) }

func (c *cache) setGen(g int) { c.gen, c.dir = g, c.genDir(g) }

// generations lists the generation numbers on disk, ascending.
func (c *cache) generations() []int {
	entries, _ := os.ReadDir(c.base)
	var gens []int
	for _, e := range entries {
		var g int
		if _, err := fmt.Sscanf(e.Name(), "g%d", &g); err == nil && e.IsDir() && e.Name() == fmt.Sprintf("g%d", g) {
			gens = append(gens, g)
		}
	}
	sort.Ints(gens)
	return gens
}

func (c *cache) check() error {
	repo, err := git.Open(storage(c.dir), nil)
	if err != nil {
		return fmt.Errorf("opening cache %s: %w", c.dir, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("reading cache config: %w", err)
	}
	rc, ok := cfg.Remotes["origin"]
	if !ok || len(rc.URLs) != 1 || rc.URLs[0] != c.url || len(rc.Fetch) != 1 || rc.Fetch[0] != c.refspec {
		return fmt.Errorf("cache %s belongs to another repository or branch", c.dir)
	}
	for _, name := range []plumbing.ReferenceName{c.branch, lastGoodRef} {
		ref, err := repo.Reference(name, false)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if err := complete(repo, ref.Hash()); err != nil {
			return err
		}
	}
	c.repo = repo
	return nil
}

// complete checks that the commit, its tree and every object below it are present.
func complete(repo *git.Repository, h plumbing.Hash) error {
	commit, err := repo.CommitObject(h)
	if err != nil {
		return fmt.Errorf("reading commit %s: %w", h, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return fmt.Errorf("reading tree of %s: %w", h, err)
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		_, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("walking tree of %s: %w", h, err)
		}
		if e.Mode.IsFile() {
			if err := repo.Storer.HasEncodedObject(e.Hash); err != nil {
				return fmt.Errorf("commit %s: object %s (%s): %w", h, e.Hash, e.Name, err)
			}
		}
	}
}

func (c *cache) reset() error {
	c.repo = nil
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("removing cache %s: %w", c.dir, err)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("creating cache %s: %w", c.dir, err)
	}
	repo, err := git.Init(storage(c.dir), nil)
	if err != nil {
		return fmt.Errorf("initialising cache %s: %w", c.dir, err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{
		Name: "origin", URLs: []string{c.url}, Fetch: []gitconfig.RefSpec{c.refspec},
	}); err != nil {
		return fmt.Errorf("configuring cache %s: %w", c.dir, err)
	}
	c.repo = repo
	return nil
}

func storage(dir string) *filesystem.Storage {
	return filesystem.NewStorage(osfs.New(dir), objcache.NewObjectLRUDefault())
}

// head returns the cached branch head, or the zero hash.
func (c *cache) head() plumbing.Hash {
	ref, err := c.repo.Reference(c.branch, false)
	if err != nil {
		return plumbing.ZeroHash
	}
	return ref.Hash()
}

// fetch brings the branch head into the cache: shallow (depth 1), this branch
// only, no tags, forced (rewritten history is fine). When a fetch fails and
// the cache itself turns out to be damaged, the cache is wiped and the fetch
// retried once; other failures (network, auth, server) are returned as they are.
func (c *cache) fetch(ctx context.Context, acc access) error {
	err := c.fetchOnce(ctx, acc)
	if err == nil || ctx.Err() != nil || c.intact() {
		return err
	}
	if rerr := c.reset(); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err := c.fetchOnce(ctx, acc); err != nil {
		return fmt.Errorf("fetching into a fresh cache: %w", err)
	}
	return nil
}

// reopen opens the cache with fresh storage (no in-memory state from earlier
// polls), wiping it when it cannot be opened at all.
func (c *cache) reopen() error {
	repo, err := git.Open(storage(c.dir), nil)
	if err != nil {
		return c.reset()
	}
	c.repo = repo
	return nil
}

// intact reports whether the open cache still passes the checks of open.
func (c *cache) intact() bool {
	c.repo = nil
	return c.check() == nil
}

func (c *cache) fetchOnce(ctx context.Context, acc access) error {
	err := c.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []gitconfig.RefSpec{c.refspec},
		Depth:      1,
		Tags:       git.NoTags,
		Force:      true,
		Auth:       acc.auth,
		CABundle:   acc.caBundle,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return err
	}
	h := c.head()
	if h.IsZero() {
		return fmt.Errorf("fetch left no %s in the cache", c.branch)
	}
	return complete(c.repo, h)
}

// packs counts the cache's pack files; many small packs slow lookups.
func (c *cache) packs() int {
	m, _ := filepath.Glob(filepath.Join(c.dir, "objects", "pack", "*.pack"))
	return len(m)
}
