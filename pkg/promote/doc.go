// Package promote decides what moves from one stage of a pipeline to the
// next: it reads pipeline.yaml (ordered stages, promoteFrom, autoMerge,
// requires, promotion windows), computes the per-service differences between
// two resolved stages and the file each edit lands in, evaluates the gates
// (healthy, soak, window, locks) and renders the promotion pull request's
// title and body within GitHub's limits.
//
// The package does no I/O of its own besides reading from an fs.FS: callers
// (internal/prbot) fetch check runs and lock state and hand them in.
package promote
