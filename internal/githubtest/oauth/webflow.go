package oauth

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// webFlow is the OAuth web flow of the App's OAuth client (github.com's
// /login/oauth/authorize and the authorization_code use of
// /login/oauth/access_token), as "Sign in with GitHub" uses it: the browser
// is sent to authorize, comes back to the redirect URI with a code and the
// client's state, and the client trades the code, with its secret, for a
// user token. A code is good once, for ten minutes, for the redirect URI it
// was issued to.
type webFlow struct {
	clientID, secret string
	callback         string // the App's registered callback URL; redirect URIs must start with it
	login            string // who is signed in to GitHub in the browser; "" denies
	codes            map[string]*webCode
	exchanged        int
}

type webCode struct {
	login, redirect string
	expires         time.Time
	used            bool
}

// EnableWebFlow registers the App's OAuth client (clientID, secret) for the
// web flow, with the callback URL GitHub would redirect to (redirect URIs
// must start with it; "" accepts any).
func (p *Provider) EnableWebFlow(clientID, secret, callback string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.web.clientID, p.web.secret, p.web.callback = clientID, secret, callback
	if p.web.codes == nil {
		p.web.codes = map[string]*webCode{}
	}
}

// SignInWeb makes login the person signed in to GitHub in every browser:
// authorize lets the client in as login ("" makes them deny it).
func (p *Provider) SignInWeb(login string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.web.login = login
}

// CodesExchanged counts the web-flow codes traded for tokens.
func (p *Provider) CodesExchanged() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.web.exchanged
}

// authorize is GET /login/oauth/authorize: the browser arrives with the
// client's id, redirect URI and state and is sent back with a code (or an
// error) and the same state.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet {
		p.mu.Lock()
		p.violation("%s %s: want GET (a browser is redirected here)", r.Method, r.URL.Path)
		p.mu.Unlock()
		http.Error(w, "githubtest: want GET", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &p.web
	if f.clientID == "" || q.Get("client_id") != f.clientID {
		// GitHub shows a 404 page for an unknown client; nothing goes back to the client.
		http.Error(w, "githubtest: unknown client_id (call EnableWebFlow)", http.StatusNotFound)
		return http.StatusNotFound
	}
	redirect := q.Get("redirect_uri")
	u, err := url.Parse(redirect)
	if redirect == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || (f.callback != "" && !strings.HasPrefix(redirect, f.callback)) {
		http.Error(w, "githubtest: the redirect_uri is not associated with this application", http.StatusBadRequest)
		return http.StatusBadRequest
	}
	back := u.Query()
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	if f.login == "" {
		back.Set("error", "access_denied")
		back.Set("error_description", "The user has denied your application access.")
	} else {
		code := randomHex(10)
		f.codes[code] = &webCode{login: f.login, redirect: redirect, expires: time.Now().Add(10 * time.Minute)}
		back.Set("code", code)
	}
	u.RawQuery = back.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
	return http.StatusFound
}

// exchangeCode is POST /login/oauth/access_token with a code: the client's
// id and secret, the code and the redirect URI it was issued to buy a user
// token (GET /user answers its login). Errors are 200s with an "error", as
// GitHub answers them.
func (p *Provider) exchangeCode(w http.ResponseWriter, r *http.Request, form url.Values) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range form {
		switch k {
		case "client_id", "client_secret", "code", "redirect_uri":
		default:
			p.violation("%s %s: unknown parameter %q", r.Method, r.URL.Path, k)
		}
	}
	answer := func(v map[string]any) int { return answer(w, v) }
	f := &p.web
	if f.clientID == "" || form.Get("client_id") != f.clientID ||
		subtle.ConstantTimeCompare([]byte(form.Get("client_secret")), []byte(f.secret)) != 1 {
		return answer(map[string]any{"error": "incorrect_client_credentials", "error_description": "The client_id and/or client_secret passed are incorrect."})
	}
	c := f.codes[form.Get("code")]
	if c == nil || c.used || time.Now().After(c.expires) {
		return answer(map[string]any{"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."})
	}
	if rd := form.Get("redirect_uri"); rd != "" && rd != c.redirect {
		return answer(map[string]any{"error": "redirect_uri_mismatch", "error_description": "The redirect_uri MUST match the registered callback URL for this application."})
	}
	c.used = true
	f.exchanged++
	tok := "ghu_" + randomHex(18)
	p.tokens[tok] = c.login
	return answer(map[string]any{"access_token": tok, "token_type": "bearer", "scope": ""})
}
