// Package github connects Stagehand to GitHub: a REST client authenticated as a GitHub App installation
// (ghinstallation caches and refreshes the token) with bounded retries on 5xx and rate limits, the
// check-run approval gate of DESIGN §5 (a `stagehand/<env>` check run showing the plan, with Approve and
// Reject buttons bound to the planHash), the webhook handlers for check_run and pull_request events, and PR
// previews (`stagehand/<env> preview`).
package github
