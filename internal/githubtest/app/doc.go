// Package app is the GitHub App of internal/githubtest: its id, its installation, its RSA key (as GitHub
// lets you download it) and the installation tokens it issues for a JWT the key signed, judged as GitHub
// judges it (RS256, iss = the app id, at most ten minutes of validity, on this host's clock); a token is
// valid until its expiry.
//
//	a := srv.App()
//	tr, _ := ghinstallation.New(http.DefaultTransport, a.ID(), a.InstallationID(), a.PrivateKeyPEM())
package app
