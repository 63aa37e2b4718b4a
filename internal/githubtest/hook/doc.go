// Package hook builds the webhook deliveries of internal/githubtest from GitHub's real example payloads
// (@octokit/webhooks-examples, in testdata): check_run (a click on a button, or another App's run), status,
// pull_request and push, each pointed at the test's repository, sender and App installation, and signs and
// sends them as GitHub does (X-Hub-Signature-256). The builders take values, not a server: githubtest's
// Webhooks fills them from its state.
//
//	d, err := hook.PushOf(src, hook.Push{Branch: "main", Before: old, After: sha})
//	status, body, err := hook.Send(ctx, url+"/webhook/github", secret, d)
package hook
