package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	v := s.guard.who(w, r)
	if v == nil {
		return
	}
	envs, err := s.environments(r.Context())
	if err != nil {
		s.view.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	m := status.NewMatrix(envs, s.o.loc)
	if s.o.promotions != nil {
		m.Promotions = s.o.promotions(r.Context())
	}
	s.view.render(w, r, http.StatusOK, page{name: "overview", Title: "Environments", Nav: "overview", Viewer: v, Data: newOverview(m)})
}

// overviewView is the matrix with each cell's words, symbol and class
// worked out here, so the template has little left to do per cell (it is
// the page's hot loop: 2000 cells for 500 services × 4 environments).
type overviewView struct {
	Environments []status.MatrixEnvironment
	Rows         []overviewRow
	// Promotions are what each promotion between adjacent stages waits for.
	Promotions []status.Promotion
}

type overviewRow struct {
	Service string
	Cells   []overviewCell
}

type overviewCell struct {
	Env, State, Class, Icon, Version string
	Absent                           bool
	Targets                          []overviewTarget
}

type overviewTarget struct{ Target, State, Text, Title string }

func newOverview(m status.Matrix) overviewView {
	v := overviewView{Environments: m.Environments, Rows: make([]overviewRow, 0, len(m.Services)), Promotions: m.Promotions}
	for _, r := range m.Services {
		row := overviewRow{Service: r.Service, Cells: make([]overviewCell, len(r.Cells))}
		for i, c := range r.Cells {
			env := m.Environments[i].Name
			if c == nil {
				row.Cells[i] = overviewCell{Env: env, State: "absent", Absent: true}
				continue
			}
			cell := overviewCell{Env: env, State: c.State, Class: stateClass(c.State), Icon: stateIcons[c.State], Version: c.Version,
				Targets: make([]overviewTarget, 0, len(c.Targets))}
			for _, t := range c.Targets {
				text := t.Target + ": " + t.Live
				if t.Desired != t.Live {
					text += " → " + t.Desired
				}
				if t.Drift {
					text += " (drift)"
				}
				if t.State != c.State {
					text += " · " + t.State
				}
				cell.Targets = append(cell.Targets, overviewTarget{Target: t.Target, State: t.State, Text: text, Title: strings.Join(t.Notes, "; ")})
			}
			row.Cells[i] = cell
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// environmentView is the environment page.
type environmentView struct {
	Env *status.Environment
	// Pending is the plan waiting for approval; nil when none is, or when
	// it is the one being applied.
	Pending *approval.Pending
	Plan    *reconcile.Plan // the pending plan, decoded
	Rows    []planRow
	Blocked []reconcile.Blocked
	// Rolling is the apply under way (nil when none is, or when it is
	// deployed and waits for its release approval: Pending then), and
	// InFlight its changes.
	Rolling  *approval.InFlight
	InFlight []planRow
	History  []historyView
	// DORA is the panel of the environment's DORA figures over 30 days.
	DORA      doraView
	Layout    *manifest.Layout
	Commit    func(string) string
	LockTypes []lock.Type
	// BreakGlass is the break-glass offered while the windows are closed (nil: none).
	BreakGlass *breakGlassView
}

// planRow is one change of a plan as the table shows it.
type planRow struct {
	reconcile.Change
	FromTag, ToTag, Digest string
}

func rows(cs []reconcile.Change) []planRow {
	out := make([]planRow, 0, len(cs))
	for _, c := range cs {
		_, digest, _ := strings.Cut(c.To, "@")
		out = append(out, planRow{Change: c, FromTag: status.Tag(c.From), ToTag: status.Tag(c.To), Digest: digest})
	}
	return out
}

// historyView is one history entry with its changes decoded.
type historyView struct {
	approval.Entry
	Rows     []planRow
	Duration time.Duration
}

func (s *Server) environment(w http.ResponseWriter, r *http.Request) {
	v := s.guard.who(w, r)
	if v == nil {
		return
	}
	e, err := s.b.Environment(r.Context(), r.PathValue("env"))
	if err != nil {
		s.view.failErr(w, r, err)
		return
	}
	if v = s.guard.in(w, r, v, e.Name); v == nil {
		return
	}
	ev := environmentView{Env: e, Layout: e.Layout, Commit: s.view.commitURL, LockTypes: lock.Types}
	// A release approval waits on the applied plan, still in flight: it is
	// deployed, not rolling out, and it is the decision to offer.
	release := e.Pending != nil && e.Pending.Release
	if e.Pending != nil && (e.InFlight == nil || e.InFlight.PlanHash != e.Pending.PlanHash || release) {
		ev.Pending = e.Pending
		var p reconcile.Plan
		if err := json.Unmarshal(e.Pending.Plan, &p); err == nil {
			ev.Plan, ev.Rows, ev.Blocked = &p, rows(p.Changes), p.Blocked
		}
	}
	if e.InFlight != nil && !(release && e.InFlight.PlanHash == e.Pending.PlanHash) {
		ev.Rolling = e.InFlight
		var cs []reconcile.Change
		_ = json.Unmarshal(e.InFlight.Changes, &cs)
		ev.InFlight = rows(cs)
	}
	ev.DORA = s.doraPanel(r.Context(), e)
	ev.BreakGlass = s.breakGlassFor(r.Context(), v, e)
	for _, h := range e.History {
		var cs []reconcile.Change
		_ = json.Unmarshal(h.Changes, &cs)
		hv := historyView{Entry: h, Rows: rows(cs)}
		if !h.Started.IsZero() && h.Finished.After(h.Started) {
			hv.Duration = h.Finished.Sub(h.Started).Round(time.Second)
		}
		ev.History = append(ev.History, hv)
	}
	s.view.render(w, r, http.StatusOK, page{name: "environment", Title: e.Name, Nav: "env:" + e.Name, Viewer: v, Data: ev})
}

// decide approves or rejects the plan the form names, through the same
// Decider as the API and the check run, as the signed-in login.
func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := s.guard.mayPost(w, r)
		if v == nil {
			return
		}
		env, hash := r.PathValue("env"), r.PostFormValue("planHash")
		if !slices.Contains(s.b.EnvironmentNames(), env) {
			s.view.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no environment %q.", env))
			return
		}
		if !s.guard.approves(w, r, v, env) {
			return
		}
		back := "/environments/" + env
		if hash == "" {
			s.view.fail(w, r, http.StatusBadRequest, "The form names no plan (planHash); reload the page.")
			return
		}
		var (
			p   *approval.Pending
			err error
			msg string
		)
		if approve {
			p, err = s.b.Approve(r.Context(), env, hash, v.Principal())
			switch {
			case err != nil:
			case p.Needed() > 1 && !p.Complete():
				msg = fmt.Sprintf("Approved by %s: %s; revision %s waits for more approvals in %s.", v.Login, p.Tally(), gitsource.ShortRevision(p.Revision), env)
			case p.Release:
				msg = fmt.Sprintf("Approved by %s: releasing revision %s in %s.", v.Login, gitsource.ShortRevision(p.Revision), env)
			default:
				msg = fmt.Sprintf("Approved by %s: applying revision %s to %s.", v.Login, gitsource.ShortRevision(p.Revision), env)
			}
		} else {
			reason := strings.TrimSpace(r.PostFormValue("reason"))
			if len(reason) > 4096 {
				s.view.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The reason is %d bytes long; at most 4096 are accepted.", len(reason)))
				return
			}
			p, err = s.b.Reject(r.Context(), env, hash, approval.Why{By: v.Principal(), Reason: reason})
			switch {
			case err == nil && p.Release:
				msg = fmt.Sprintf("Rejected by %s: the deploy of revision %s to %s fails.", v.Login, gitsource.ShortRevision(p.Revision), env)
			case err == nil:
				msg = fmt.Sprintf("Rejected by %s: revision %s will not be applied to %s.", v.Login, gitsource.ShortRevision(p.Revision), env)
			}
		}
		var np *approval.NotPendingError
		switch {
		case err != nil && notFound(s.o.statusOf(err)):
			s.view.failErr(w, r, err) // the environment went from the configuration
			return
		case errors.Is(err, approval.ErrRefused):
			s.view.flashNext(w, r, "Not approved: "+err.Error(), true)
		case errors.As(err, &np):
			s.view.flashNext(w, r, "Nothing was decided: the plan you saw is no longer the one pending ("+err.Error()+"). Review the plan shown now.", true)
		case err != nil:
			s.view.flashNext(w, r, "Nothing was decided: "+err.Error(), true)
		default:
			s.view.flashNext(w, r, msg, false)
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
	}
}

// searchView is the answer to "where is it running?".
type searchView struct {
	Query   string
	Results []status.Placement
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	v := s.guard.who(w, r)
	if v == nil {
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > 256 {
		s.view.fail(w, r, http.StatusBadRequest, "The search is longer than 256 characters.")
		return
	}
	sv := searchView{Query: q}
	if q != "" {
		envs, err := s.environments(r.Context())
		if err != nil {
			s.view.fail(w, r, http.StatusInternalServerError, err.Error())
			return
		}
		sv.Results = status.Where(envs, q)
	}
	s.view.render(w, r, http.StatusOK, page{name: "search", Title: "Where is it running?", Nav: "search", Viewer: v, Data: sv})
}

// notFound says whether an error's status (WithErrorStatus) is 404: what
// the form names is gone, and the page says so instead of a flash.
func notFound(status int, _ string) bool { return status == http.StatusNotFound }
