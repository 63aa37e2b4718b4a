// Package githubtest is an in-process GitHub REST API for tests: every request a client sends and every
// response the server returns is validated against GitHub's own OpenAPI description (package contract: a
// subset of @octokit/openapi 23.0.2), so a call that GitHub would reject fails the test that made it.
//
// The server is stateful for what Stagehand and prbot use: repositories modelled in memory (branches →
// commits → files), git refs, the contents API, pull requests (list, create, update, merge), check runs,
// commit statuses, deployments, issue comments and labels, collaborator permissions, team membership and
// GitHub App installation tokens (the app's JWT is verified with its public key; tokens expire). Faults
// (5xx, 429 rate limits, latency) can be injected per route, signed webhook deliveries are built from real
// payloads, and github.com's OAuth device and web flows hand out user tokens (package oauth).
//
// A test reaches what the server models through small parts:
//
//	srv := githubtest.New(t)
//	srv.CreateRepo("acme", "manifests", "main")
//	repo := srv.Repo("acme", "manifests")      // seed and inspect one repository
//	sha := repo.Commit("main", map[string]string{"a.json": "{}"}, "seed")
//	repo.SetPermission("alice", "write")
//	n := repo.OpenPullRequest("feature", "main", "title", "alice")
//	runs := repo.CheckRuns()
//	d := srv.Webhooks("acme", "manifests").PullRequest(n, "opened", "alice") // a delivery; Send posts it
//	srv.Faults().Inject(githubtest.Fault{Status: 502})
//	key := srv.App().PrivateKeyPEM()           // with App().ID() and App().InstallationID()
//	tok := srv.OAuth().UserToken("bob")
//	client := github.NewClient(nil).WithAuthToken(srv.Token()) // plus WithEnterpriseURLs(srv.URL(), srv.URL())
package githubtest
