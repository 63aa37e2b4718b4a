package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// locksView is the locks page.
type locksView struct {
	Locks     []lockRow
	Types     []lock.Type
	Paths     []string // the environments' lock paths, offered in the form
	Path      string   // preselected path
	Available bool
}

// lockPages is the locks page and its forms: take, extend and remove a
// lock in the Backend's lock service, as the guard allows.
type lockPages struct {
	b     Backend
	o     *options
	guard *guard
	view  *renderer
	order func(ctx context.Context) []string // the environments in stage order
}

type lockRow struct {
	lock.Lock
	Expired bool
	Until   string
}

// list is the locks page.
func (p *lockPages) list(w http.ResponseWriter, r *http.Request) {
	v := p.guard.who(w, r)
	if v == nil {
		return
	}
	lv := locksView{Types: lock.Types, Path: r.URL.Query().Get("path")}
	svc := p.b.LockService()
	if svc != nil {
		lv.Available = true
		ls, err := svc.List(r.Context(), "")
		if err != nil {
			p.view.fail(w, r, http.StatusInternalServerError, "Listing locks failed: "+err.Error())
			return
		}
		now := svc.Now()
		for _, l := range ls {
			lv.Locks = append(lv.Locks, lockRow{Lock: l, Expired: l.Expired(now), Until: l.ExpiresAt.In(p.o.loc).Format(lock.TimeLayout)})
		}
		for _, name := range p.order(r.Context()) {
			if e, err := p.b.Environment(r.Context(), name); err == nil && e.LockPath != "" {
				lv.Paths = append(lv.Paths, e.LockPath)
			}
		}
	}
	p.view.render(w, r, http.StatusOK, page{name: "locks", Title: "Locks", Nav: "locks", Viewer: v, Data: lv})
}

// form is the service and the form's path and type, or an answer sent.
func (p *lockPages) form(w http.ResponseWriter, r *http.Request) (*viewer, *lock.Service, string, lock.Type, bool) {
	v := p.guard.mayPost(w, r)
	if v == nil {
		return nil, nil, "", "", false
	}
	svc := p.b.LockService()
	if svc == nil {
		p.view.fail(w, r, http.StatusNotFound, "This reconciler has no lock service.")
		return nil, nil, "", "", false
	}
	path, err := lock.NormalizePath(strings.TrimSpace(r.PostFormValue("path")))
	if err == nil {
		var t lock.Type
		if t, err = lock.ParseType(r.PostFormValue("type")); err == nil {
			for _, env := range p.envsOfPath(r, path) {
				if !p.guard.approves(w, r, v, env) {
					return nil, nil, "", "", false
				}
			}
			return v, svc, path, t, true
		}
	}
	p.view.flashNext(w, r, "Nothing was changed: "+err.Error(), true)
	http.Redirect(w, r, "/locks", http.StatusSeeOther)
	return nil, nil, "", "", false
}

// expiry reads the form's duration ("2h", "90m", "1d") or until ("Sat 31
// Dec, 12:00", "2026-12-31 12:00"), exactly one of them.
func (p *lockPages) expiry(r *http.Request, from time.Time) (time.Time, error) {
	d, until := strings.TrimSpace(r.PostFormValue("duration")), strings.TrimSpace(r.PostFormValue("until"))
	switch {
	case d != "" && until != "":
		return time.Time{}, errors.New("give a duration or an until time, not both")
	case d != "":
		dur, err := lock.ParseDuration(d)
		if err != nil {
			return time.Time{}, err
		}
		return from.Add(dur), nil
	case until != "":
		return lock.ParseUntil(until, p.o.loc)
	}
	return time.Time{}, errors.New("give a duration (such as 2h) or an until time (such as 2026-12-31 12:00)")
}

// create takes a lock.
func (p *lockPages) create(w http.ResponseWriter, r *http.Request) {
	v, svc, path, t, ok := p.form(w, r)
	if !ok {
		return
	}
	l := lock.Lock{Path: path, Type: t, Links: map[string]string{}}
	var err error
	if l.ExpiresAt, err = p.expiry(r, svc.Now()); err == nil {
		if reason := strings.TrimSpace(r.PostFormValue("reason")); reason != "" {
			l.Links["reason"] = reason
		}
		if link := strings.TrimSpace(r.PostFormValue("link")); link != "" {
			if u, perr := url.Parse(link); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				err = fmt.Errorf("link %q is not an http(s) URL", link)
			} else {
				l.Links["link"] = link
			}
		}
	}
	if err == nil && len(l.Links["reason"]) > 1024 {
		err = errors.New("the reason is longer than 1024 characters")
	}
	if err == nil {
		l.Default(nil)
		// The page has no lock:admin: no holds, and every type's maximum duration (lock.Agent.Lock).
		if l, err = svc.For(lockCaller(v)).Lock(r.Context(), l); err == nil {
			p.view.flashNext(w, r, l.LockedMessage(p.o.loc)+".", false)
		}
	}
	if err != nil {
		p.view.flashNext(w, r, "Not locked: "+err.Error(), true)
	}
	http.Redirect(w, r, "/locks", http.StatusSeeOther)
}

// extend extends a lock.
func (p *lockPages) extend(w http.ResponseWriter, r *http.Request) {
	v, svc, path, t, ok := p.form(w, r)
	if !ok {
		return
	}
	held, err := svc.Get(r.Context(), path)
	if err == nil && held.Type != t {
		err = fmt.Errorf("%s is locked for %s, not for %s", path, held.Type.Friendly(), t.Friendly())
	}
	if err == nil {
		from := svc.Now()
		if held.ExpiresAt.After(from) {
			from = held.ExpiresAt
		}
		var until time.Time
		if until, err = p.expiry(r, from); err == nil {
			// A lock belongs to its author, compared as unlocking compares
			// them; extending another's takes lock:admin, which the page has not.
			if held, err = svc.For(lockCaller(v)).Extend(r.Context(), path, t, until); err == nil {
				p.view.flashNext(w, r, fmt.Sprintf("Extended the lock on %s (%s) until %s.", held.Path, held.Type.Friendly(),
					held.ExpiresAt.In(p.o.loc).Format(lock.TimeLayout)), false)
			}
		}
	}
	if err != nil {
		p.view.flashNext(w, r, "Not extended: "+err.Error(), true)
	}
	http.Redirect(w, r, "/locks", http.StatusSeeOther)
}

// unlock removes a lock.
func (p *lockPages) unlock(w http.ResponseWriter, r *http.Request) {
	v, svc, path, t, ok := p.form(w, r)
	if !ok {
		return
	}
	// The page has no lock:admin: a person removes their own locks here, and
	// another's live lock only through the API or the CLI with lock:admin.
	ls, err := svc.For(lockCaller(v)).Unlock(r.Context(), path, t, false)
	switch {
	case err != nil:
		p.view.flashNext(w, r, "Not unlocked: "+err.Error(), true)
	case len(ls) == 0:
		p.view.flashNext(w, r, fmt.Sprintf("%s is not locked for %s.", path, t.Friendly()), false)
	default:
		p.view.flashNext(w, r, fmt.Sprintf("Unlocked %s (%s).", ls[0].Path, ls[0].Type.Friendly()), false)
	}
	http.Redirect(w, r, "/locks", http.StatusSeeOther)
}

// lockCaller is the viewer as the lock service knows callers: their typed
// identity (github:<login>), without lock:admin.
func lockCaller(v *viewer) lock.Caller {
	return lock.Caller{Name: identity.ID{Kind: identity.GitHub, Name: v.Login}.String()}
}

// envsOfPath are the environments a lock at path concerns: those whose lock
// path is at, above or beneath it; [""] when none is.
func (p *lockPages) envsOfPath(r *http.Request, path string) []string {
	var out []string
	for _, name := range p.b.EnvironmentNames() {
		e, err := p.b.Environment(r.Context(), name)
		if err != nil || e.LockPath == "" {
			continue
		}
		if e.LockPath == path || strings.HasPrefix(path, e.LockPath+"/") || strings.HasPrefix(e.LockPath, path+"/") {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}
