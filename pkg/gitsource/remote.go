package gitsource

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// remote is the Source's side that talks to the git server: the access
// one request presents, the branch head's ls-remote, and the fetches into
// the cache (the head's, deeper history's).
type remote struct {
	url      *parsedURL
	branch   string
	caBundle ReadFunc
	auth     *auth
	redact   *redactor
	cache    *cache
	maxPacks int // more packs than this in the cache: compact it
}

// access is what one poll presents to the remote: credentials, and the
// extra certificate authorities of an https source with a private CA.
type access struct {
	auth     transport.AuthMethod
	caBundle []byte
}

// access builds this poll's access. The CA bundle is read on every poll,
// like tokens, so a rotated Secret takes effect without a restart.
func (r *remote) access(ctx context.Context) (access, error) {
	a, err := r.auth.method(ctx, r.url.hostPort)
	if err != nil {
		return access{}, err
	}
	if r.caBundle == nil {
		return access{auth: a}, nil
	}
	pem, err := r.readCABundle()
	if err != nil {
		return access{}, err
	}
	return access{auth: a, caBundle: pem}, nil
}

// readCABundle reads the CA bundle and checks that it holds a certificate.
func (r *remote) readCABundle() ([]byte, error) {
	pem, err := r.caBundle()
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, errors.New("CA bundle: holds no PEM certificate")
	}
	return pem, nil
}

// fetchHead brings head into the cache unless it is there already and
// returns the cached branch head commit.
func (r *remote) fetchHead(ctx context.Context, acc access, head plumbing.Hash) (*object.Commit, error) {
	if err := r.cache.open(); err != nil {
		return nil, err
	}
	if r.cache.packs() > r.maxPacks {
		// Compact: a fresh shallow clone holds one pack.
		if err := r.cache.compact(); err != nil {
			return nil, err
		}
	}
	if r.cache.head() != head {
		if err := r.cache.reopen(); err != nil {
			return nil, err
		}
		if err := r.cache.fetch(ctx, acc); err != nil {
			return nil, fmt.Errorf("fetching %s of %s: %w", r.branch, r.url.redacted, r.redact.err(err))
		}
	}
	rev := r.cache.head()
	commit, err := r.cache.repo.CommitObject(rev)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", rev, err)
	}
	return commit, nil
}

// lsRemote asks the remote for the branch head: one request, nothing fetched.
func (r *remote) lsRemote(ctx context.Context, acc access) (plumbing.Hash, error) {
	remote := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{r.url.clean}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: acc.auth, CABundle: acc.caBundle})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("listing refs of %s: %w", r.url.redacted, r.redact.err(err))
	}
	want := plumbing.NewBranchReferenceName(r.branch)
	for _, ref := range refs {
		if ref.Name() == want && ref.Type() == plumbing.HashReference {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("listing refs of %s: %w: %s", r.url.redacted, ErrBranchNotFound, r.branch)
}

// deepen fetches the branch's history to depth into the cache.
func (r *remote) deepen(ctx context.Context, depth int) error {
	acc, err := r.access(ctx)
	if err != nil {
		return r.redact.err(err)
	}
	err = r.cache.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []gitconfig.RefSpec{r.cache.refspec},
		Depth:      depth,
		Tags:       git.NoTags,
		Force:      true,
		Auth:       acc.auth,
		CABundle:   acc.caBundle,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching history of %s (depth %d): %w", r.branch, depth, r.redact.err(err))
	}
	return nil
}
