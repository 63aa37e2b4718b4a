// Package webhook receives GitHub webhooks: an http.Handler (mounted by the
// daemon at /webhook/github) that verifies X-Hub-Signature-256 (HMAC-SHA256
// over the raw body with a required secret, compared in constant time),
// ignores deliveries it has already processed (X-GitHub-Delivery, bounded
// LRU) and dispatches by X-GitHub-Event to registered handlers. A request
// without a valid signature gets 401 and nothing runs.
//
// Whoever can reach the port can send anything, so the receiver spends
// little on requests it will refuse: it judges the method, the Content-Type
// (application/json only; a form-encoded hook gets 415 even when signed) and
// the headers before reading; refuses a Content-Length over the cap (5 MiB
// by default, 413) before reading and never reads more than the cap before
// the signature is checked; reads and handles at most 8 deliveries at once
// (others wait up to 2 s, then get 503 with Retry-After); and bounds the read
// of one body by a deadline. A signed payload must be the shape its
// X-GitHub-Event says — a push has ref, after and repository, a check_run
// its check run's id, name, head_sha and status — or it gets 400, so a
// handler never sees a check_run without a check run.
//
//	recv, err := webhook.New(secret)                          // empty secret: error
//	push, err := webhook.OnPush(cfg.Source.URL, cfg.Source.Branch, src.Trigger)
//	recv.Handle("push", push)                                  // wakes the git source
//	handler.Register(recv)                                     // internal/github: check_run (the approval button), pull_request (previews)
//	mux.Handle("/webhook/github", recv)
//
// Handlers get Event{Type, Delivery, Payload} with the raw JSON and parse
// what they need (go-github v60 types). A handler error answers 500 and the
// delivery is forgotten, so GitHub's redelivery is processed again.
package webhook
