// Package oauth is github.com's OAuth side for internal/githubtest: the device flow (/login/device/code and
// /login/oauth/access_token, polled strictly: a poll sooner than the interval is answered slow_down with a
// longer one), the web flow ("Sign in with GitHub": /login/oauth/authorize and the code exchange) and the
// user tokens both hand out, which authenticate REST calls and which GET /user answers.
//
//	p := srv.OAuth()                 // a githubtest.Server's provider
//	p.EnableDeviceFlow("Iv1.cli", 5*time.Second, 5*time.Second)
//	p.AuthorizeDevice(p.PendingUserCodes()[0], "alice")
//	tok := p.UserToken("bob")        // as `gh auth token` would hold one
package oauth
