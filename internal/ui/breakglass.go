package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// Break-glass on the page: while an environment's deploy windows are closed, a person whom the
// environment's break-glass rule allows lets the plan waiting there through them, once, with a reason,
// as the API's POST /api/v1/environments/{env}/break-glass does: the same approval.BreakGlasser (the
// daemon), the same identity (github:<login>), the same reason check (approval.CheckReason).

// BreakGlassRule decides whether login may break the glass in env (ok false: why not): internal/cli gives
// the API's own rule (the scope break-glass:<env> as internal/auth decides it for github:<login>).
type BreakGlassRule func(ctx context.Context, login, env string) (ok bool, why string, err error)

// WithBreakGlass offers break-glass on the page, to those rule allows. Without it the page offers none
// (the API and the CLI still do).
func WithBreakGlass(rule BreakGlassRule) Option {
	return func(o *options) error {
		if rule == nil {
			return errors.New("break-glass: nil rule")
		}
		o.breakGlass = rule
		return nil
	}
}

// maxBreakGlassHash bounds the planHash a break-glass form may name (the API's bound).
const maxBreakGlassHash = 128

// breakGlassView is the break-glass offered on an environment page: the plan it would let through, and
// whether the viewer may (Why: why not).
type breakGlassView struct {
	PlanHash string
	Revision string
	// Windows says how the closed windows judge now ("closed: inside the deny window year-end; opens …").
	Windows string
	May     bool
	Why     string
	// MaxReason is approval.MaxBreakGlassReason, for the form.
	MaxReason int
}

// glassPlan is the plan of e that a break-glass would let through its closed windows: the plan pending
// approval (not a release approval's), or the deferred plan of a skipConfirmation environment (none is
// pending: the status's planHash); ok false when the windows are open or no plan waits for them.
func glassPlan(e *status.Environment) (hash, revision string, ok bool) {
	if e.Windows == nil || e.Windows.Open {
		return "", "", false
	}
	if p := e.Pending; p != nil {
		if p.Release {
			return "", "", false
		}
		return p.PlanHash, p.Revision, true
	}
	if e.Phase == status.PhaseDeferred && e.PlanHash != "" {
		return e.PlanHash, e.Revision, true
	}
	return "", "", false
}

// breakGlassFor is what the environment page offers of break-glass to v (nil: nothing).
func (s *Server) breakGlassFor(ctx context.Context, v *viewer, e *status.Environment) *breakGlassView {
	if s.o.breakGlass == nil || v == nil {
		return nil
	}
	if _, ok := s.b.(approval.BreakGlasser); !ok {
		return nil
	}
	hash, rev, ok := glassPlan(e)
	if !ok {
		return nil
	}
	bv := &breakGlassView{PlanHash: hash, Revision: rev, Windows: e.Windows.String(), MaxReason: approval.MaxBreakGlassReason}
	may, why, err := s.o.breakGlass(ctx, v.Login, e.Name)
	switch {
	case err != nil:
		bv.Why = fmt.Sprintf("checking whether %s may break the glass failed: %v", v.Login, err)
	case !may:
		bv.Why = why
	default:
		bv.May = true
	}
	return bv
}

// breakGlass lets the plan the form names through env's closed deploy windows, as the signed-in login,
// with the form's reason: the page's session and CSRF rules, then the environment's break-glass rule,
// then the daemon's checks (the plan still waiting, the windows closed).
func (s *Server) breakGlass(w http.ResponseWriter, r *http.Request) {
	v := s.guard.mayPost(w, r)
	if v == nil {
		return
	}
	env, hash := r.PathValue("env"), r.PostFormValue("planHash")
	if !slices.Contains(s.b.EnvironmentNames(), env) {
		s.view.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no environment %q.", env))
		return
	}
	bg, ok := s.b.(approval.BreakGlasser)
	if s.o.breakGlass == nil || !ok {
		s.view.fail(w, r, http.StatusNotFound, "This page does not offer break-glass; use the API or `reconciler break-glass`.")
		return
	}
	if v = s.guard.in(w, r, v, env); v == nil {
		return
	}
	may, why, err := s.o.breakGlass(r.Context(), v.Login, env)
	if err != nil {
		s.view.fail(w, r, http.StatusBadGateway, fmt.Sprintf("Checking whether %s may break the glass in %s failed: %v", v.Login, env, err))
		return
	}
	if !may {
		s.view.fail(w, r, http.StatusForbidden, fmt.Sprintf("%s may not break the glass in %s: %s", v.Login, env, why))
		return
	}
	switch {
	case hash == "":
		s.view.fail(w, r, http.StatusBadRequest, "The form names no plan (planHash); reload the page.")
		return
	case len(hash) > maxBreakGlassHash:
		s.view.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The planHash is %d bytes long; at most %d are accepted.", len(hash), maxBreakGlassHash))
		return
	}
	back := "/environments/" + env
	reason, err := approval.CheckReason(r.PostFormValue("reason"))
	if err != nil {
		s.view.flashNext(w, r, "Nothing was let through: "+err.Error()+".", true)
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	p, err := bg.BreakGlass(r.Context(), env, hash, approval.Why{By: v.Principal(), Reason: reason})
	var np *approval.NotPendingError
	switch {
	case err != nil && notFound(s.o.statusOf(err)):
		s.view.failErr(w, r, err)
		return
	case errors.Is(err, approval.ErrRefused):
		s.view.flashNext(w, r, "Not let through: "+err.Error(), true)
	case errors.As(err, &np):
		s.view.flashNext(w, r, "Nothing was let through: the plan you saw is no longer the one waiting ("+err.Error()+"). Review the plan shown now.", true)
	case err != nil:
		s.view.flashNext(w, r, "Nothing was let through: "+err.Error(), true)
	case p.Complete():
		s.view.flashNext(w, r, fmt.Sprintf("Break-glass by %s: applying revision %s to %s through its closed deploy windows.", v.Login, gitsource.ShortRevision(p.Revision), env), false)
	default:
		s.view.flashNext(w, r, fmt.Sprintf("Break-glass by %s: %s; revision %s goes out through the closed deploy windows of %s once approved.",
			v.Login, p.Tally(), gitsource.ShortRevision(p.Revision), env), false)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
