package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/tracing"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// guard decides who may call the API's routes: it verifies the bearer
// token (the options' authenticator), holds each principal to its rate
// (limit) and each route to its scope, and names the lock routes' caller.
type guard struct {
	o     *options
	limit *auth.Limiter // per principal; nil when unlimited
}

// authenticate puts the verified principal of the bearer token in the
// request's context and answers 401 (with the reason) to everything it
// cannot verify; a principal over its rate limit gets 429 with Retry-After.
func (g *guard) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.o.auth.Enabled() {
			fail(w, refuse(kindDisabled, "the API is disabled: no credentials configured (server.tokensFile, server.apiTokenFile, github or server.kubernetesAuth)"))
			return
		}
		p, err := g.o.auth.Authenticate(r.Context(), auth.BearerToken(r))
		if err != nil {
			if _, known := StatusOf(err); known == httpserve.CodeInternal {
				// Not a refusal of the credentials: the source failed to answer.
				g.o.log.Error(err, "verifying credentials")
				err = refuse(kindUnavailable, "verifying your credentials failed; try again later")
			}
			fail(w, err)
			return
		}
		if ok, wait := g.limit.Allow(string(p.Kind)+":"+p.Name, time.Now()); !ok {
			fail(w, &requestError{kind: kindTooMany, msg: "too many requests for this token; retry after the Retry-After seconds", wait: wait})
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// require answers 403, naming the scope and why, unless the request's
// principal has scope ("approve:{env}" is the environment of the path).
func (g *guard) require(scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tracing.SetRoute(r.Context(), r.Pattern) // the route of the API's own mux names the request's span
		want := strings.ReplaceAll(scope, "{env}", r.PathValue("env"))
		p, _ := auth.FromContext(r.Context())
		ok, why, err := g.o.auth.Authorize(r.Context(), p, want)
		if err != nil {
			g.o.log.Error(err, "authorizing", "principal", p.String(), "scope", want)
			fail(w, refuse(kindUnavailable, "checking whether %s may %s failed; try again later", p.Name, want))
			return
		}
		if !ok {
			fail(w, refuse(kindForbidden, "%s needs scope %s: %s", r.Method+" "+r.URL.Path, want, why))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// lockCaller is who takes or removes a lock: the verified principal, named
// by its typed identity (github:alice, token:ci-locker), an admin with
// lock:admin.
func (g *guard) lockCaller(r *http.Request) (lock.Caller, error) {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		return lock.Caller{}, errors.New("no verified principal")
	}
	admin, _, err := g.o.auth.Authorize(r.Context(), p, auth.ScopeLockAdmin)
	if err != nil {
		return lock.Caller{}, err
	}
	return lock.Caller{Name: p.ID().String(), Admin: admin}, nil
}
