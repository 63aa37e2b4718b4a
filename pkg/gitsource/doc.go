// Package gitsource keeps a view of one branch of a git repository current:
// the newest accepted commit, and its tree as an fs.FS read straight from git
// objects.
//
// A poll first asks the remote for the branch head (one ls-remote request).
// Only when the head moved does it fetch — shallow (depth 1), single branch,
// no tags, forced so rewritten histories work — into a persistent bare
// cache (WithCacheDir) that survives restarts. A cache that is corrupt or
// belongs to another URL or branch is wiped and cloned again. With
// WithVerifyKeyring, the head commit must carry a valid OpenPGP signature
// from the keyring; otherwise that revision is refused (ErrUnverified) and
// the last good snapshot stays current.
//
//	src, err := gitsource.New(url, "main", gitsource.WithInterval(time.Minute))
//	snap, err := src.Poll(ctx)                         // one check; Snapshot{Revision, FS, Time}
//	go src.Run(ctx, func(ctx context.Context, s gitsource.Snapshot) { ... }) // interval/cron loop
//	src.Trigger()                                      // from a webhook: poll now (bursts coalesce)
//	src.Status()                                       // last good revision, last error, next poll
//	src.Latest()                                       // last good snapshot
//	src.At(sha)                                        // an earlier fetched revision, from the cache
//
// Credentials: an HTTPS token from a TokenSource asked before every poll
// (WithTokenSource, sent as WithUsername's user or "x-access-token": a
// rotated token file or a refreshed GitHub App installation token works
// without a restart), user:password in the URL, or an SSH key
// (WithSSHKeyFile) with the host key checked strictly against
// WithKnownHostsFile (unknown or changed keys fail; nothing is ever added).
// A private CA (WithCABundle) and the keyring are read on every use too.
// Every error is redacted: no token, password or URL password appears in
// messages.
//
// The package knows nothing of Stagehand's configuration: internal/wire
// translates reconciler.yaml's source: section into these options.
//
// TreeFS implements fs.FS, fs.StatFS, fs.ReadDirFS, fs.ReadFileFS and
// fs.ReadLinkFS over a git tree; symbolic links are reported as links by
// Lstat and ReadDir and followed by Open only while they stay inside the tree
// (ErrOutsideTree otherwise).
package gitsource
