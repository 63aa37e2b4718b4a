// Package promote decides what moves from one stage of a pipeline to the
// next: it reads pipeline.yaml (ordered stages, promoteFrom, autoMerge,
// requires, promotion windows), computes the per-service differences between
// two resolved stages and the file each edit lands in, evaluates the gates
// (healthy, soak, window, locks) and renders the promotion pull request's
// title and body within GitHub's limits.
//
// Semantics, in short (Evaluate has the details):
//
//   - healthy: the versions promoted are those the earlier stage had at the
//     newest commit of the base branch whose stagehand/<from> check run
//     succeeded; newer, not yet healthy versions wait.
//   - soak: a service moves once the earliest success in the unbroken run of
//     successful checks with its promoted versions is at least soak old.
//   - window: a stage with a window accepts promotions while its cron
//     schedule fired within the last duration, i.e. at t when a firing lies
//     in (t-duration, t]; schedules may carry CRON_TZ=<zone>.
//   - locks: a locked later stage gets nothing opened, updated or merged.
//   - edits: only differing services change; a service the later stage has
//     is edited where its effective entry is written, a new one goes to the
//     same-named file of the later stage, else its root manifest; files
//     outside the stage's directory (shared includes) are never edited.
//     Nothing is ever removed by a promotion.
//
// pipeline.yaml also says who may bump what without a stored secret (the
// keyless bump API of prbot serve): owners maps files to the upstream
// repositories allowed to bump them (default: the repository named like the
// file), and a stage with acceptsBumps: true takes bumps from the CI runs its
// bumpClaims allow.
//
// The package does no I/O of its own besides reading from an fs.FS: callers
// (internal/prbot) fetch check runs and lock state and hand them in.
package promote
