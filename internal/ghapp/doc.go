// Package ghapp authenticates as a GitHub App's installation on GitHub's
// clock: it signs the App's JWT and mints, caches and renews the
// installation token, judging every time by GitHub's clock (a clock.Remote
// fed by the answers to the token requests) instead of this host's, which
// may be off. It is the one place both users of the App's credentials get
// their tokens: the GitHub API client (internal/github, as an
// http.RoundTripper) and git over HTTPS (internal/wire, Token).
//
// GitHub refuses a JWT issued in its future (from a host about 30 s ahead,
// the JWT being backdated by 30 s) or already expired (from a host about two
// minutes behind), and an installation token lives an hour by GitHub's
// clock. So the JWT's issued-at and expiry are stamped on GitHub's clock as
// far as it is known; until a first answer from GitHub they are stamped on
// the local clock, and a first token request GitHub refuses (401) while its
// answer taught the clock a different offset is signed again and sent once
// more. A token is replaced a minute before its expiry on GitHub's clock.
//
//	tr, err := ghapp.New(http.DefaultTransport, ghapp.Installation{AppID: appID, InstallationID: installationID, Key: pemKey},
//		ghapp.WithAPIURL("https://ghe.example.com/api/v3"), ghapp.WithClock(clock.NewRemote(now)))
//	tok, err := tr.Token(ctx)                 // for git: user x-access-token
//	client := &http.Client{Transport: tr}     // for the REST API: Authorization: token …
package ghapp
