// Package webhook receives GitHub webhooks: an http.Handler (mounted by the
// daemon at /webhook/github) that verifies X-Hub-Signature-256 (HMAC-SHA256
// over the raw body with a required secret, compared in constant time),
// caps the body (25 MiB by default, 413 beyond), ignores deliveries it has
// already processed (X-GitHub-Delivery, bounded LRU) and dispatches by
// X-GitHub-Event to registered handlers. A request without a valid signature
// gets 401 and nothing runs.
//
//	recv, err := webhook.New(secret)                          // empty secret: error
//	push, err := webhook.OnPush(cfg.Source.URL, cfg.Source.Branch, src.Trigger)
//	recv.Handle("push", push)                                  // wakes the git source
//	recv.Handle("check_run", approvals.OnCheckRun)             // approval gate (issue 8)
//	recv.Handle("pull_request", prbot.OnPullRequest)
//	mux.Handle("/webhook/github", recv)
//
// Handlers get Event{Type, Delivery, Payload} with the raw JSON and parse
// what they need (go-github v60 types). A handler error answers 500 and the
// delivery is forgotten, so GitHub's redelivery is processed again.
package webhook
