// Package githubtest is an in-process GitHub REST API for tests: every request a client sends and every
// response the server returns is validated against GitHub's own OpenAPI description (a subset of
// @octokit/openapi 23.0.2 in testdata), so a call that GitHub would reject fails the test that made it.
//
// The server is stateful for what Stagehand and prbot use: repositories modelled in memory (branches →
// commits → files), git refs, the contents API, pull requests (list, create, update, merge), check runs,
// commit statuses, issue comments and labels, collaborator permissions, team membership and GitHub App
// installation tokens (the app's JWT is verified with its public key; tokens expire). Faults (5xx, 429 rate
// limits, latency) can be injected per route, and signed webhook deliveries are built from real payloads.
//
//	srv := githubtest.New(t)
//	srv.CreateRepo("acme", "manifests", "main")
//	sha := srv.Commit("acme", "manifests", "main", map[string]string{"a.json": "{}"}, "seed")
//	client := github.NewClient(nil).WithAuthToken(srv.Token()) // plus WithEnterpriseURLs(srv.URL(), srv.URL())
package githubtest
