package ui

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth"
)

// guard decides who may see a page and send a form: a signed-in session
// (cookies), within its login's rate (limit), that the access policy lets
// read, approve or lock; it answers each refusal itself (view).
type guard struct {
	o       *options
	cookies *cookies
	limit   *auth.Limiter // per login; nil when unlimited
	view    *renderer
}

// who returns r's viewer, or answers the sign-in page (401), a refusal
// (403) or, past the login's rate limit, 429, and returns nil.
func (g *guard) who(w http.ResponseWriter, r *http.Request) *viewer {
	se := g.cookies.session(r)
	if se == nil {
		next := "/"
		if r.Method == http.MethodGet && r.URL.Path != "/events" {
			next = r.URL.RequestURI()
		}
		g.view.render(w, r, http.StatusUnauthorized, page{name: "signin", Title: "Sign in", Next: next})
		return nil
	}
	if ok, wait := g.limit.Allow(se.Login, time.Now()); !ok {
		g.tooMany(w, r, se.Login, wait)
		return nil
	}
	acc, err := g.o.policy(r.Context(), se.Login, "")
	if err != nil {
		g.view.fail(w, r, http.StatusBadGateway, fmt.Sprintf("Checking what %s may do failed: %v", se.Login, err))
		return nil
	}
	v := &viewer{Login: se.Login, CSRF: se.CSRF, Access: acc}
	if !acc.Read {
		g.view.render(w, r, http.StatusForbidden, page{name: "message", Title: "Not allowed", Viewer: v,
			Data: fmt.Sprintf("%s may not see Stagehand's environments: %s", se.Login, acc.Why)})
		return nil
	}
	return v
}

// mayPost checks a form post: a signed-in reader and the session's CSRF
// token. It answers and returns nil otherwise.
func (g *guard) mayPost(w http.ResponseWriter, r *http.Request) *viewer {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		g.view.fail(w, r, http.StatusBadRequest, "Reading the form failed: "+err.Error())
		return nil
	}
	if !csrfOK(r, g.cookies.session(r)) {
		g.view.fail(w, r, http.StatusForbidden, "This form has expired or did not come from this page (CSRF token missing or wrong). Reload the page and try again.")
		return nil
	}
	return g.who(w, r)
}

// in returns v with its Access in env, or answers and returns nil when the
// policy cannot say.
func (g *guard) in(w http.ResponseWriter, r *http.Request, v *viewer, env string) *viewer {
	if env == "" {
		return v
	}
	acc, err := g.o.policy(r.Context(), v.Login, env)
	if err != nil {
		g.view.fail(w, r, http.StatusBadGateway, fmt.Sprintf("Checking what %s may do in %s failed: %v", v.Login, env, err))
		return nil
	}
	c := *v
	c.Access = acc
	return &c
}

// approves checks that v may approve and lock in env; it answers 403 and
// returns false otherwise.
func (g *guard) approves(w http.ResponseWriter, r *http.Request, v *viewer, env string) bool {
	if v = g.in(w, r, v, env); v == nil {
		return false
	}
	if !v.Access.Approve {
		where := ""
		if env != "" {
			where = " in " + env
		}
		g.view.fail(w, r, http.StatusForbidden, fmt.Sprintf("%s may read but not approve or lock%s: %s", v.Login, where, v.Access.Why))
		return false
	}
	return true
}

// tooMany answers a page saying when to come back.
func (g *guard) tooMany(w http.ResponseWriter, r *http.Request, login string, wait time.Duration) {
	secs := int(math.Max(1, math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	g.view.fail(w, r, http.StatusTooManyRequests, fmt.Sprintf("%s sent more than %d requests in a row; wait %d s and reload.", login, g.limit.Burst(), secs))
}
