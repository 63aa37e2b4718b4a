// Package github connects Stagehand to GitHub: a REST client authenticated as a GitHub App installation
// (internal/ghapp mints the token and renews it on GitHub's clock) with bounded retries on 5xx and rate limits, the
// check-run approval gate (a `stagehand/<env>` check run showing the plan, with Approve and
// Reject buttons bound to the planHash), the webhook handlers for check_run and pull_request events, and PR
// previews (`stagehand/<env> preview`).
//
// Wiring (as `reconciler run` does it):
//
//	b, _ := wire.New(cfg)                 // internal/wire builds the client, once per process
//	gh, _ := b.GitHub()
//	d, _ := daemon.New(cfg, append(parts, daemon.WithGate(approval.Gates(approval.Manual(), github.NewGate(gh))))...)
//	p := preview.New(cfg.Source.CacheDir, cfg.EnvironmentNames(), d.Plan, b.BranchSource) // internal/github/preview
//	h, _ := github.NewHandler(gh, d, cfg.Source.Branch, github.WithPreviewer(p), github.OnDecisionError(logIt))
//	recv, _ := b.Webhook()
//	h.Register(recv)
//	defer func() { h.StopPreviews(); h.Wait() }() // clicks are decided after their answer; let the last ones finish
//
// A click may reach any replica: the daemon's Approve hands it to the leader through the state ConfigMap
// when this replica does not lead.
//
// The GitHub App needs these repository permissions: Checks read & write (check runs), Contents read (clone,
// and listing check runs by commit), Pull requests read (previews), Metadata read, Deployments read & write
// when github.deployments.enabled is set (a GitHub deployment per apply, see Deployments); and the organization
// permission Members read when github.approvers.teams is used. Subscribe it to the check_run,
// pull_request and push events, with the webhook secret in github.webhookSecretFile.
//
// PR previews leave the request path: a pull_request delivery only queues the preview of the PR's head and
// is answered at once. A worker pool (WithPreviewWorkers, default 1) computes previews outside the request
// and outside the daemon's apply path, each within WithPreviewTimeout (default 2 minutes) and the manifest
// resolution budgets. The newest head per pull request wins: a waiting preview is replaced by a newer
// head's, and a running one for an older head is cancelled and its result discarded. At most
// WithPreviewQueueSize (default 100) pull requests wait; beyond that the oldest waiting one is dropped
// (OnPreviewError, stagehand_github_previews_dropped_total). Each branch has its own cache directory
// (source.cacheDir/previews/), used by one preview at a time; it is removed when the pull request closes,
// and caches untouched for WithPreviewCacheAge (default 24 hours) are swept when the workers go idle. At
// shutdown, StopPreviews cancels them before Wait.
//
// Who may approve: the sender's role on the repository (role_name: read < triage < write < maintain <
// admin) must reach github.approvers.minPermission, or the sender must be an active member of one of
// github.approvers.teams ("org/slug"); an environment's own approvals.teams/minPermission replace that
// rule for it (WithApprovals, MayApprove(ctx, env, login)). An unauthorised click leaves the plan pending
// and says so on the check run.
package github
