// Package gitsource keeps the reconciler's view of the manifests repository
// current: the newest accepted commit of one branch, and its tree as an
// fs.FS read straight from git objects.
//
// A poll first asks the remote for the branch head (one ls-remote request).
// Only when the head moved does it fetch — shallow (depth 1), single branch,
// no tags, forced so rewritten histories work — into a persistent bare
// cache under source.cacheDir that survives restarts. A cache that is corrupt
// or belongs to another URL or branch is wiped and cloned again. With
// source.verify {mode: head}, the head commit must carry a valid OpenPGP
// signature from the keyring; otherwise that revision is refused
// (ErrUnverified) and the last good snapshot stays current.
//
//	src, err := gitsource.New(cfg.Source)            // config.Source from reconciler.yaml
//	snap, err := src.Poll(ctx)                         // one check; Snapshot{Revision, FS, Time}
//	go src.Run(ctx, func(ctx context.Context, s gitsource.Snapshot) { ... }) // interval/cron loop
//	src.Trigger()                                      // from a webhook: poll now (bursts coalesce)
//	src.Status()                                       // last good revision, last error, next poll
//	src.Latest()                                       // last good snapshot
//	src.At(sha)                                        // an earlier fetched revision, from the cache
//
// Credentials: an HTTPS token (source.auth.tokenFile, user source.auth.username
// or "x-access-token"), user:password in the URL, an SSH key
// (source.auth.sshKeyFile) with the host key checked strictly against
// source.auth.knownHostsFile (unknown or changed keys fail; nothing is ever
// added), or a GitHub App installation token (source.auth.githubApp, minted and
// refreshed before expiry by ghinstallation, sent as user x-access-token).
// Token files are read on every poll. Every error is redacted: no token,
// password or URL password appears in messages.
//
// TreeFS implements fs.FS, fs.StatFS, fs.ReadDirFS, fs.ReadFileFS and
// fs.ReadLinkFS over a git tree; symbolic links are reported as links by
// Lstat and ReadDir and followed by Open only while they stay inside the tree
// (ErrOutsideTree otherwise).
package gitsource
