package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrBranchNotFound is returned when the remote has no such branch.
var ErrBranchNotFound = errors.New("branch not found")

// Snapshot is one accepted revision of the branch.
type Snapshot struct {
	// Revision is the commit SHA (40 hex digits).
	Revision string
	// FS is the commit's tree, read from git objects in the cache. It stays
	// readable until the cache has to be re-cloned (corruption or compaction).
	FS fs.FS
	// Time is the commit's committer time.
	Time time.Time
}

// Status is what a Source knows about the branch, for reports and readiness.
type Status struct {
	URL          string    `json:"url"` // without credentials
	Branch       string    `json:"branch"`
	Revision     string    `json:"revision,omitempty"`    // last good revision; empty before the first success
	RevisionTime time.Time `json:"revisionTime,omitzero"` // its commit time
	FetchedAt    time.Time `json:"fetchedAt,omitzero"`    // when it was accepted
	CheckedAt    time.Time `json:"checkedAt,omitzero"`    // last successful ls-remote
	Refused      string    `json:"refused,omitempty"`     // head revision refused by verification, if any
	LastError    string    `json:"lastError,omitempty"`   // last poll's error (redacted), empty after a success
	Failures     int       `json:"failures"`              // consecutive failed polls
	FailingSince time.Time `json:"failingSince,omitzero"` // when the first of them failed; zero after a success
	Errors       int       `json:"errors"`                // failed polls since the Source was made (refusals excluded)
	NextPoll     time.Time `json:"nextPoll,omitzero"`     // when Run polls next
	Err          error     `json:"-"`                     // LastError as an error, for errors.Is
}

// Source keeps the newest accepted revision of one branch of a git
// repository: an ls-remote first, a shallow fetch into a persistent cache only
// when the head moved, optional signature verification of the head.
//
// Its parts each have one responsibility: the remote fetches (remote.go),
// the verifier checks signatures (verify.go), the pacer times the polls of
// Run (run.go); the Source keeps the snapshots and the status.
type Source struct {
	url      *parsedURL
	branch   string
	opts     options
	redact   *redactor
	cache    *cache
	remote   *remote
	verifier *verifier
	pacer    *pacer

	pollMu sync.Mutex // one poll at a time

	mu      sync.Mutex
	current Snapshot
	status  Status
	loaded  bool // the cache's last-good ref was read
}

// New builds a Source following branch of the repository at url (https,
// http, ssh, user@host:path or file; user:password in an https URL is used
// and redacted). It does no I/O beyond checking the CA bundle; the first Poll
// opens or creates the cache.
func New(url, branch string, opts ...Option) (*Source, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring git source: %w", err)
		}
	}
	u, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		return nil, errors.New("branch: required")
	}
	if !ValidBranch(branch) {
		return nil, fmt.Errorf("branch: invalid branch name %q", branch)
	}
	s := &Source{
		url:      u,
		branch:   branch,
		opts:     o,
		redact:   &redactor{},
		verifier: &verifier{branch: branch, keyring: o.keyring, allowedSigners: o.allowedSigners},
		pacer:    &pacer{interval: o.interval, schedule: o.schedule, o: o, trigger: make(chan struct{}, 1)},
	}
	s.remote = &remote{url: u, branch: branch, caBundle: o.caBundle, redact: s.redact, maxPacks: o.maxPacks}
	if o.caBundle != nil {
		if !strings.HasPrefix(u.clean, "https://") {
			return nil, fmt.Errorf("CA bundle: set, but %s is not an https URL", u.redacted)
		}
		if _, err := s.remote.readCABundle(); err != nil {
			return nil, err
		}
	}
	if s.remote.auth, err = newAuth(u, &o, s.redact); err != nil {
		return nil, err
	}
	dir := o.cacheDir
	if dir == "" {
		if dir, err = defaultCacheDir(); err != nil {
			return nil, err
		}
	}
	s.cache = newCache(dir, u.clean, branch)
	s.remote.cache = s.cache
	s.status = Status{URL: u.redacted, Branch: branch}
	return s, nil
}

// Latest returns the last accepted snapshot; ok is false before the first.
func (s *Source) Latest() (snap Snapshot, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, s.current.Revision != ""
}

// ErrRevisionNotCached is returned by At for a commit the cache does not hold.
var ErrRevisionNotCached = errors.New("revision not in the cache")

// At returns the snapshot of an earlier fetched revision (a full 40-digit
// SHA) from the cache, without network access, after the same signature check
// as Poll. Revisions fetched before the last cache compaction or re-clone are
// gone (ErrRevisionNotCached).
func (s *Source) At(rev string) (Snapshot, error) {
	h := plumbing.NewHash(rev)
	if len(rev) != 40 || h.String() != strings.ToLower(rev) {
		return Snapshot{}, fmt.Errorf("revision %q: want a full 40-digit commit SHA", rev)
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if err := s.cache.open(); err != nil {
		return Snapshot{}, err
	}
	commit, err := object.GetCommit(storage(s.cache.dir), h)
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return Snapshot{}, fmt.Errorf("revision %s: %w", rev, ErrRevisionNotCached)
		}
		return Snapshot{}, fmt.Errorf("reading commit %s: %w", rev, err)
	}
	if err := s.verifier.verify(commit); err != nil {
		return Snapshot{}, err
	}
	return s.snapshot(commit)
}

// Status reports the last good revision, the last error and the schedule.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Poll checks the branch once and returns the newest accepted snapshot.
// When the remote head equals the last accepted revision, it makes exactly
// one ls-remote request and fetches nothing; a head refused before is checked
// again from the cache (the keyring may have changed), also without a fetch. On error the
// last good snapshot stays available through Latest.
func (s *Source) Poll(ctx context.Context) (Snapshot, error) {
	snap, _, err := s.poll(ctx)
	return snap, err
}

func (s *Source) poll(ctx context.Context) (snap Snapshot, changed bool, err error) {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	defer func() { s.record(err) }()

	if err := s.load(); err != nil {
		return Snapshot{}, false, err
	}
	acc, err := s.remote.access(ctx)
	if err != nil {
		return Snapshot{}, false, s.redact.err(err)
	}
	head, err := s.remote.lsRemote(ctx, acc)
	if err != nil {
		return Snapshot{}, false, err
	}
	s.mu.Lock()
	s.status.CheckedAt = s.opts.now()
	cur := s.current
	s.mu.Unlock()
	if head.String() == cur.Revision {
		return cur, false, nil
	}
	// A head refused before is in the cache already: it is checked again
	// without a fetch, so a keyring that now trusts its signer takes effect.
	commit, err := s.remote.fetchHead(ctx, acc, head)
	if err != nil {
		return Snapshot{}, false, err
	}
	if snap, err = s.accept(commit); err != nil {
		return Snapshot{}, false, err
	}
	return snap, true, nil
}

// accept verifies commit and makes it the current snapshot, recording it in
// the cache as the last good revision; a commit that fails verification is
// recorded as refused instead.
func (s *Source) accept(commit *object.Commit) (Snapshot, error) {
	if err := s.verifier.verify(commit); err != nil {
		if errors.Is(err, ErrUnverified) {
			s.mu.Lock()
			s.status.Refused = commit.Hash.String()
			s.mu.Unlock()
		}
		return Snapshot{}, err
	}
	snap, err := s.snapshot(commit)
	if err != nil {
		return Snapshot{}, err
	}
	if err := s.cache.repo.Storer.SetReference(plumbing.NewHashReference(lastGoodRef, commit.Hash)); err != nil {
		return Snapshot{}, fmt.Errorf("recording last good revision in the cache: %w", err)
	}
	s.mu.Lock()
	s.current = snap
	s.status.Revision, s.status.RevisionTime, s.status.FetchedAt = snap.Revision, snap.Time, s.opts.now()
	s.status.Refused = ""
	s.mu.Unlock()
	return snap, nil
}

// load reads the last good revision recorded in the cache once, so a restart
// keeps serving it (and skips the fetch when the head has not moved).
func (s *Source) load() error {
	if s.loaded {
		return nil
	}
	if err := s.cache.open(); err != nil {
		return err
	}
	s.loaded = true
	ref, err := s.cache.repo.Reference(lastGoodRef, false)
	if err != nil {
		return nil // nothing recorded: a new cache
	}
	commit, err := s.cache.repo.CommitObject(ref.Hash())
	if err != nil {
		return nil
	}
	if s.verifier.verify(commit) != nil {
		return nil // keyring changed since: do not trust the old revision
	}
	snap, err := s.snapshot(commit)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	s.current = snap
	s.status.Revision, s.status.RevisionTime = snap.Revision, snap.Time
	s.mu.Unlock()
	return nil
}

// snapshot builds a Snapshot whose FS has its own storage handle, so readers
// never share go-git's caches with the fetching code.
func (s *Source) snapshot(c *object.Commit) (Snapshot, error) {
	st := storage(s.cache.dir)
	commit, err := object.GetCommit(st, c.Hash)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading commit %s: %w", c.Hash, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading tree of %s: %w", c.Hash, err)
	}
	return Snapshot{
		Revision: c.Hash.String(),
		FS:       NewTreeFS(st, tree, commit.Committer.When),
		Time:     commit.Committer.When,
	}, nil
}

func (s *Source) record(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.status.LastError, s.status.Err, s.status.Failures, s.status.FailingSince = "", nil, 0, time.Time{}
		return
	}
	s.status.LastError, s.status.Err = err.Error(), err
	if !errors.Is(err, ErrUnverified) {
		// A refused head is an answer, not a failure to back off from.
		if s.status.Failures == 0 {
			s.status.FailingSince = s.opts.now()
		}
		s.status.Failures++
		s.status.Errors++
	}
}
