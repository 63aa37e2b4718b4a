// Package reconcile turns a resolved environment into a plan against the
// environment's target clusters and namespaces, and applies a plan exactly:
// it patches only the container images that change, records the revision,
// emits an Event per workload and waits for each rollout.
//
// # Mapping
//
// A service maps to the Deployments, StatefulSets, DaemonSets and CronJobs of
// a target namespace labelled <selector label>=<service> (default
// app.kubernetes.io/name), or, when none is, to the workloads named exactly
// like the service that carry no selector label. A manifest container maps to
// the one container or init container, in each of those workloads, whose image
// repository is its dockerName or ends with "/"+dockerName; the registry and
// path of the running image are kept and only the tag and digest change. No
// workload, no matching container, two matching containers (ambiguous) and
// registry failures are Problems; a service with a problem in a target has no
// changes in that target.
//
// # Plan
//
// A plan costs one List per workload kind per target, however many services
// the manifest holds, and one registry request per distinct repository:tag
// that verification (a dockerDigest must be what the registry serves for the
// tag) or pinning (a tag without digest is deployed as repo:tag@digest) needs.
// While Reconciler.Watch runs (the daemon) it costs no List at all: each
// target's kinds (one table, pkg/workload) are watched, restricted to the selector label and
// stripped of every field Stagehand does not read, and a plan reads those
// watches (plus one Get per kind for a service mapped by name to an
// unlabelled workload). Each target is read within the target timeout; one
// that does not answer is a problem for each service ("target … unreachable
// since …") and the other targets are planned and applied. Its JSON is the `reconciler plan -o json` contract:
//
//	{"environment", "revision", "skipConfirmation", "planHash",
//	 "changes":   [{"service","target","namespace","kind","name","container","from","to"}],
//	 "blocked":   [{...change, "locks": ["message", ...]}],
//	 "problems":  [{"service","target","message"}],
//	 "unmanaged": [{"target","namespace","kind","name","service"}],
//	 "unchanged": N}
//
// "container" is the container's name, or "init:"+name for an init container.
// planHash is "sha256:" + the hex sha256 of the JSON array of changes sorted
// by target, namespace, kind, name and container (see Hash); approval binds
// to it. Changes a deploy lock at <lockPath>/<target>/<service> forbids are
// listed under "blocked" and are not part of the hash. Locks cost one
// LockChecker.Blocking call per changed target and service, or, when the
// LockChecker is also a LockLister, one BlockingWithin call per target; Plan,
// which reads the watches, reads them through BlockingWithinCached when the
// LockChecker is a CachedLockLister (Apply's own plan checks them afresh).
//
// # Apply
//
// Reconciler.Apply plans again, always from fresh Lists and a fresh lock
// check, sent at once (what it patches is checked against the API server,
// never a watch a moment behind), and refuses
// (*StalePlanError, errors.Is ErrStalePlan) when the fresh planHash differs
// from the approved one. It then holds a deploy lock on <lockPath>/<target>
// for every target it changes, re-checks the service's locks right before each
// patch (a lock taken mid-apply stops the patches not yet sent; with a
// LockLister the re-checks of one target share one query begun after they
// asked, read from the lock store's cache when it is a CachedLockLister: with
// pkg/lock's Watched storage, a watch of the Lock objects, so the re-checks
// cost no request), sends one strategic merge patch per workload naming only
// the changed containers plus the stagehand.io/revision annotation (field
// manager "stagehand", bounded concurrency), and waits for every rollout,
// woken by the watch's events while Watch runs, else polling one List per kind
// per target. A rollout is judged by kstatus (sigs.k8s.io/cli-utils, as Flux
// judges it) after Stagehand's stricter checks: the controller must have
// observed the patch's generation, a paused Deployment fails, and a
// StatefulSet or DaemonSet with updateStrategy OnDelete whose pods do not all
// run the new revision ends as OutcomeOnDelete ("patched, pods change when
// deleted"), neither done nor waited for. Once the last patch is answered it
// records a Deploying Event on each patched workload, while the rollouts run;
// Apply returns only after every Event is written. Each workload's outcome is
// reported in the Result and, as it happens, through WithProgress, an Option
// of New or of one Apply.
package reconcile
