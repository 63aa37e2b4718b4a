package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
)

// UI configures the web page served at / on server.listen. In YAML it is
// either a mapping or a bare boolean: `server.ui: false` turns the page off.
type UI struct {
	// Enabled serves the page (default true).
	Enabled *bool `json:"enabled,omitempty"`
	// DemoLogin signs every visitor from a loopback address in as this
	// login without GitHub, for `make demo`; refused unless server.listen
	// is a loopback address. Never set by default.
	DemoLogin string `json:"demoLogin,omitempty"`
	// SessionKeyFile holds the key (at least 32 bytes) that signs and
	// encrypts login cookies; replicas sharing it share sign-ins. Without
	// it each process makes its own at start.
	SessionKeyFile string `json:"sessionKeyFile,omitempty"`
	// OAuth is "Sign in with GitHub": the GitHub App's OAuth client.
	OAuth UIOAuth `json:"oauth"`
}

// UIOAuth is the OAuth web flow of the GitHub App whose client id and secret
// are in the files.
type UIOAuth struct {
	ClientIDFile     string `json:"clientIDFile,omitempty"`
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
	// WebURL is GitHub's web address, where /login/oauth/authorize and
	// /login/oauth/access_token are (default https://github.com).
	WebURL string `json:"webURL,omitempty"`
}

// DocumentedKeys marks UI as a mapping whose keys are documented one by one,
// although it also accepts a boolean (see UnmarshalJSON).
func (UI) DocumentedKeys() {}

// UnmarshalJSON reads a mapping (unknown keys refused) or a bare boolean,
// which sets Enabled alone.
func (u *UI) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*u = UI{Enabled: &on}
		return nil
	}
	type plain UI
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("server.ui: want true, false or a mapping of enabled, demoLogin, sessionKeyFile, oauth: %w", err)
	}
	*u = UI(p)
	return nil
}

// On reports whether the page is served.
func (u UI) On() bool { return u.Enabled == nil || *u.Enabled }

var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

// validate checks the ui section against server.listen.
func (u UI) validate(listen string, bad func(field, format string, a ...any)) {
	if u.DemoLogin != "" {
		if !loginRE.MatchString(u.DemoLogin) {
			bad("server.ui.demoLogin", "%q is not a GitHub-style login (letters, digits and \"-\", at most 39)", u.DemoLogin)
		}
		host, _, err := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); err == nil && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			bad("server.ui.demoLogin", "signs in anyone without GitHub, so it needs a loopback server.listen such as 127.0.0.1:8080; got %q", listen)
		}
		if u.OAuth.ClientIDFile != "" {
			bad("server.ui.demoLogin", "is for demos without GitHub; remove it or server.ui.oauth")
		}
	}
	if (u.OAuth.ClientIDFile == "") != (u.OAuth.ClientSecretFile == "") {
		bad("server.ui.oauth", "clientIDFile and clientSecretFile go together; got only one")
	}
	if u.OAuth.WebURL != "" {
		if p, err := url.Parse(u.OAuth.WebURL); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("server.ui.oauth.webURL", "%q is not an absolute http(s) URL", u.OAuth.WebURL)
		}
	}
}
