package ui

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// oauthState is the cookie of a sign-in under way: the state sent to
// GitHub (checked on return, against login CSRF) and where to go after.
type oauthState struct {
	State string `json:"s"`
	Next  string `json:"n"`
}

// signinTTL is how long a sign-in at GitHub may take.
const signinTTL = 10 * time.Minute

// signin signs people in and out: the demo login offered to a loopback
// browser, GitHub's OAuth web flow, and the session cookie either starts.
type signin struct {
	o       *options
	cookies *cookies
	view    *renderer
}

// page is the sign-in page, or the overview for one signed in already.
func (s *signin) page(w http.ResponseWriter, r *http.Request) {
	if se := s.cookies.session(r); se != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.view.render(w, r, http.StatusOK, page{name: "signin", Title: "Sign in"})
}

// sameOrigin reports whether a form post came from this site: browsers
// send Origin on POST; a missing one (older clients) is let through, since
// the demo login holds nothing worth forging and sessions need CSRF tokens.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// demo signs a loopback visitor in as the demo login.
func (s *signin) demo(w http.ResponseWriter, r *http.Request) {
	login := s.view.demoFor(r)
	if login == "" || !sameOrigin(r) {
		s.view.fail(w, r, http.StatusForbidden, "The demo sign-in is only for a browser on the reconciler's own machine (server.ui.demoLogin).")
		return
	}
	if err := s.cookies.signIn(w, r, login); err != nil {
		s.view.fail(w, r, signInStatus(err), err.Error())
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInStatus is the status of a failed sign-in: 400 over plain HTTP to
// another host (the request's fault), 403 for a login Stagehand uses for
// itself, else 500.
func signInStatus(err error) int {
	if errors.Is(err, errPlainHTTP) {
		return http.StatusBadRequest
	}
	if errors.Is(err, errReserved) {
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

func (s *signin) signout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil || !csrfOK(r, s.cookies.session(r)) {
		s.view.fail(w, r, http.StatusForbidden, "This form has expired or did not come from this page (CSRF token missing or wrong).")
		return
	}
	clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// start sends the browser to GitHub's authorize page.
func (s *signin) start(w http.ResponseWriter, r *http.Request) {
	a := s.o.oauth
	if a == nil {
		s.view.fail(w, r, http.StatusNotFound, "Sign-in with GitHub is not configured (server.ui.oauth).")
		return
	}
	if !keepsCookies(r) {
		s.view.fail(w, r, http.StatusBadRequest, errPlainHTTP.Error())
		return
	}
	st := oauthState{State: randomToken(), Next: localPath(r.URL.Query().Get("next"))}
	if err := s.cookies.set(w, stateCookie, st, signinTTL); err != nil {
		s.view.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	q := url.Values{"client_id": {a.ClientID}, "redirect_uri": {callbackURL(r)}, "state": {st.State}, "allow_signup": {"false"}}
	http.Redirect(w, r, a.WebURL+"/login/oauth/authorize?"+q.Encode(), http.StatusFound)
}

// callbackURL is where GitHub sends the browser back: this server's
// /auth/callback, as the browser reached it.
func callbackURL(r *http.Request) string {
	scheme := "http"
	if secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/auth/callback"
}

// localPath keeps a "next" parameter on this site: a path, never a URL.
// Browsers drop tabs and newlines from a Location and read a backslash as
// a slash, so "/\t/evil.example" would take them to another site: any
// control character or backslash makes it "/".
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") ||
		strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	return p
}

// callback trades the code for a user token, reads the login from
// GET /user and signs the browser in; the token itself is not kept.
func (s *signin) callback(w http.ResponseWriter, r *http.Request) {
	a := s.o.oauth
	if a == nil {
		s.view.fail(w, r, http.StatusNotFound, "Sign-in with GitHub is not configured (server.ui.oauth).")
		return
	}
	var st oauthState
	c, err := r.Cookie(stateCookie)
	if err != nil || s.cookies.seal.open(stateCookie, c.Value, &st) != nil {
		s.view.fail(w, r, http.StatusBadRequest, "This sign-in did not start here or took longer than 10 minutes; sign in again.")
		return
	}
	clearCookie(w, stateCookie)
	q := r.URL.Query()
	if got := q.Get("state"); got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(st.State)) != 1 {
		s.view.fail(w, r, http.StatusBadRequest, "The sign-in answer does not belong to this browser's sign-in (state mismatch); sign in again.")
		return
	}
	if e := q.Get("error"); e != "" {
		s.view.fail(w, r, http.StatusForbidden, fmt.Sprintf("GitHub did not sign you in: %s %s", e, q.Get("error_description")))
		return
	}
	token, err := s.exchange(r.Context(), a, q.Get("code"), callbackURL(r))
	if err != nil {
		s.view.fail(w, r, http.StatusBadGateway, "Signing in with GitHub failed: "+err.Error())
		return
	}
	login, err := userLogin(r.Context(), a, token)
	if err != nil {
		s.view.fail(w, r, http.StatusBadGateway, "Signing in with GitHub failed: "+err.Error())
		return
	}
	if err := s.cookies.signIn(w, r, login); err != nil {
		s.view.fail(w, r, signInStatus(err), err.Error())
		return
	}
	http.Redirect(w, r, st.Next, http.StatusSeeOther)
}

// exchange trades an authorization code for a user access token.
func (s *signin) exchange(ctx context.Context, a *OAuth, code, redirect string) (string, error) {
	if code == "" {
		return "", fmt.Errorf("GitHub sent no code")
	}
	form := url.Values{"client_id": {a.ClientID}, "client_secret": {a.ClientSecret}, "code": {code}, "redirect_uri": {redirect}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.WebURL+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("building token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := doJSON(a.Client, req, &out); err != nil {
		return "", fmt.Errorf("exchanging the code: %w", err)
	}
	if out.Error != "" || out.AccessToken == "" {
		return "", fmt.Errorf("exchanging the code: GitHub answered %q: %s", out.Error, out.Description)
	}
	return out.AccessToken, nil
}

// userLogin is the login of the user token's owner (GET /user).
func userLogin(ctx context.Context, a *OAuth, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.APIURL+"user", nil)
	if err != nil {
		return "", fmt.Errorf("building GET /user: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	var out struct {
		Login string `json:"login"`
	}
	if err := doJSON(a.Client, req, &out); err != nil {
		return "", fmt.Errorf("reading the login (GET /user): %w", err)
	}
	if out.Login == "" {
		return "", fmt.Errorf("reading the login (GET /user): no login in the answer")
	}
	return out.Login, nil
}

// doJSON sends req and decodes a 200 answer of at most 1 MiB into out.
func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}
