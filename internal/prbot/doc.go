// Package prbot is the pull-request bot of a Stagehand manifests repository
// on GitHub: Bump edits one service's image in a file owned by an upstream
// repository and opens (or updates in place) one pull request per
// environment and file; Promote opens, updates or closes the single
// promotion pull request between two stages of pipeline.yaml, applying the
// gates of pkg/promote; Rollback opens an environment's rollback pull
// request. Bot composes one small type per flow (bumper, promotions,
// rollbacks) over the lock gate and the merger. prbot serve's promotion
// loop is internal/prbot/promoter; the keyless bump API in front of Bump is
// internal/keyless.
//
// Everything goes through the GitHub REST API (contents, refs, pulls, check
// runs, statuses, issue comments), as internal/prbot/remote reaches the
// repository; nothing is cloned. Edits use the format-preserving editor of
// pkg/manifest, so a bump's diff touches only the lines of the values that
// change.
package prbot
