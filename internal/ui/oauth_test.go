package ui

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// TestSignInReturnsOnlyToThisSite: after "Sign in with GitHub" the browser
// goes back to the page it came from, and never elsewhere: a next of
// another site, of a scheme, or of a path a browser reads as another site
// once it drops tabs and newlines ("/\t/evil.example") lands on /.
func TestSignInReturnsOnlyToThisSite(t *testing.T) {
	gh := githubtest.New(t)
	gh.OAuth().EnableWebFlow("Iv1.stagehand", "oauth-secret", "http://127.0.0.1:")
	gh.OAuth().SignInWeb("maria")
	base := serve(t, newBackend(t), WithOAuth(OAuth{ClientID: "Iv1.stagehand", ClientSecret: "oauth-secret",
		WebURL: gh.RootURL(), APIURL: gh.URL(), Client: gh.Client()}))
	for _, tc := range []struct{ next, want string }{
		{"/environments/prod?tab=history", "/environments/prod?tab=history"},
		{"/search?q=checkout-api", "/search?q=checkout-api"},
		{"//evil.example/", "/"},
		{"https://evil.example/", "/"},
		{"/\\evil.example/", "/"},
		{"/\t/evil.example/", "/"},
		{"/\n/evil.example/", "/"},
		{"/\r/evil.example/", "/"},
		{"\t//evil.example/", "/"},
		{"/\x00/evil.example/", "/"},
		{"/%09/evil.example/", "/%09/evil.example/"}, // a path with %09 in it: no browser turns that into a host
		{"javascript:alert(1)", "/"},
		{"", "/"},
	} {
		t.Run(url.QueryEscape(tc.next), func(t *testing.T) {
			br := newBrowser(t, base)
			code, h, _ := br.do(mustRequest(t, base+"/auth/github?next="+url.QueryEscape(tc.next)))
			if code != http.StatusFound {
				t.Fatalf("GET /auth/github = %d", code)
			}
			code, h, _ = br.do(mustRequest(t, h.Get("Location"))) // GitHub's authorize page
			if code != http.StatusFound {
				t.Fatalf("authorize = %d", code)
			}
			code, h, body := br.do(mustRequest(t, h.Get("Location"))) // back to /auth/callback
			if code != http.StatusSeeOther || h.Get("Location") != tc.want {
				t.Errorf("callback = %d to %q, want 303 to %q\n%s", code, h.Get("Location"), tc.want, body)
			}
		})
	}
}

func mustRequest(t *testing.T, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
