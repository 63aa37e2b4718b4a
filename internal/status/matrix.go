package status

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Cell states of the Matrix: what one service is doing in one target, as a
// person reads it. They refine the Service states with the pending plan, the
// apply in flight and the last result.
const (
	CellInSync    = "in sync"
	CellPending   = "pending"     // changes wait for approval
	CellOutOfSync = "out of sync" // live differs and no plan waits (drift, or about to be applied)
	CellRolling   = "rolling out" // an approved apply is under way
	CellFailed    = "failed"      // the last apply of this service failed and it is still out of sync
	CellBlocked   = "blocked"
	CellProblem   = "problem"
	CellUnknown   = "unknown" // not planned yet
)

// Matrix is every service against every environment: the overview of the
// web page and of `reconciler status`.
type Matrix struct {
	Environments []MatrixEnvironment `json:"environments"`
	Services     []MatrixRow         `json:"services"`
	// Promotions say, between each two adjacent stages of pipeline.yaml, what
	// the next promotion waits for (none without a pipeline.yaml).
	Promotions []Promotion `json:"promotions,omitempty"`
}

// Promotion is what the promotion between two adjacent stages waits for
// (internal/promotion words pkg/promote's decision).
type Promotion struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Ready lists the services the next promotion moves now (none: it is
	// blocked, or nothing may move yet, or nothing differs).
	Ready []string `json:"ready,omitempty"`
	// Says is the decision in words: "ready: web", "blocked: …", "web
	// soaking: …", "in step: …".
	Says string `json:"says"`
}

// String is p in one line: "staging → prod: ready: web".
func (p Promotion) String() string { return p.From + " → " + p.To + ": " + p.Says }

// InStageOrder is names with the stages (pipeline.yaml's order) first, in
// that order, then the others as they come.
func InStageOrder(names, stages []string) []string {
	out := make([]string, 0, len(names))
	for _, st := range stages {
		if slices.Contains(names, st) && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// MatrixEnvironment is the head of one environment's column.
type MatrixEnvironment struct {
	Name string `json:"name"`
	// Phase is the environment's lifecycle phase (Environment.Phase).
	Phase    Phase  `json:"phase,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Pending is the planHash waiting for approval ("" when none).
	Pending         string `json:"pending,omitempty"`
	PendingRevision string `json:"pendingRevision,omitempty"`
	// Release marks a pending plan deployed and verified that waits for
	// its release approval (not rolling out: Rolling is "" then).
	Release bool `json:"release,omitempty"`
	// Approvals and Required say how far the pending plan's approval is
	// ("1 of 2 approvals"); Required is 0 without a pending plan.
	Approvals int `json:"approvals,omitempty"`
	Required  int `json:"required,omitempty"`
	// Reasons are the messages of the approval rules that apply to the
	// pending plan ("payments-api changes need 2 approvers from
	// acme/payments"), or why every approval of it is refused.
	Reasons []string `json:"reasons,omitempty"`
	// Deferred is the planHash of a skipConfirmation plan the deploy windows deferred ("" when none):
	// nothing is pending, and a break-glass names this plan; DeferredRevision is its revision.
	Deferred         string `json:"deferred,omitempty"`
	DeferredRevision string `json:"deferredRevision,omitempty"`
	// Waiting is what the environment waits for (Environment.Waiting):
	// its deploy window, an unreachable source or target.
	Waiting []string `json:"waiting,omitempty"`
	// Rolling is the planHash being applied ("" when none).
	Rolling    string   `json:"rolling,omitempty"`
	LastResult string   `json:"lastResult,omitempty"`
	Locks      []string `json:"locks,omitempty"` // "path: type by author until …"
	Unmanaged  int      `json:"unmanaged,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// MatrixRow is one service across the environments; Cells follow
// Environments (a nil cell: the service is not in that environment).
type MatrixRow struct {
	Service string        `json:"service"`
	Cells   []*MatrixCell `json:"cells"`
}

// MatrixCell is one service in one environment: its version and the worst
// state over its targets, and each target.
type MatrixCell struct {
	Version string       `json:"version"`
	State   string       `json:"state"`
	Targets []TargetCell `json:"targets"`
}

// TargetCell is one service in one target.
type TargetCell struct {
	Target  string   `json:"target"`
	State   string   `json:"state"`
	Desired string   `json:"desired"` // tags (or short digests) of the desired images, comma separated
	Live    string   `json:"live"`
	Drift   bool     `json:"drift,omitempty"` // live differs and nothing is planned to change it
	Notes   []string `json:"notes,omitempty"` // problems and blocking locks
}

// severity orders cell states, worst last, for a cell's summary state.
var severity = []string{CellUnknown, CellInSync, CellOutOfSync, CellPending, CellRolling, CellBlocked, CellProblem, CellFailed}

// NewMatrix builds the matrix of envs, in their order; services are sorted
// by name. loc is the time zone lock expiries are written in.
func NewMatrix(envs []*Environment, loc *time.Location) Matrix {
	m := Matrix{Environments: []MatrixEnvironment{}, Services: []MatrixRow{}}
	rows := map[string]*MatrixRow{}
	var names []string
	for i, e := range envs {
		m.Environments = append(m.Environments, head(e, loc))
		pending := pendingPairs(e)
		rolling := changedPairs(inFlightChanges(e))
		release := releaseWait(e)
		if release {
			rolling = nil // deployed: its cells are pending (the release), not rolling out
		}
		failed := failedPairs(e)
		for _, s := range e.Services {
			r := rows[s.Name]
			if r == nil {
				r = &MatrixRow{Service: s.Name, Cells: make([]*MatrixCell, len(envs))}
				rows[s.Name] = r
				names = append(names, s.Name)
			}
			c := &MatrixCell{Version: s.Version, State: CellUnknown, Targets: []TargetCell{}}
			for _, t := range s.Targets {
				key := s.Name + "\x00" + t.Target
				tc := TargetCell{Target: t.Target, Desired: tags(t.Images, true), Live: tags(t.Images, false), Notes: append(append([]string{}, t.Problems...), t.Locks...)}
				switch t.State {
				case StateInSync:
					tc.State = CellInSync
				case StateBlocked:
					tc.State = CellBlocked
				case StateProblem:
					tc.State = CellProblem
				case StateOutOfSync:
					switch {
					case rolling[key]:
						tc.State = CellRolling
					case pending[key]:
						tc.State = CellPending
					case failed[key]:
						tc.State = CellFailed
					default:
						tc.State, tc.Drift = CellOutOfSync, true
					}
				default:
					tc.State = CellUnknown
				}
				if tc.State == CellInSync && rolling[key] {
					// The plan saw it changed before the apply finished: still rolling out.
					tc.State = CellRolling
				}
				if tc.State == CellInSync && release && pending[key] {
					// Deployed, awaiting its release approval.
					tc.State = CellPending
				}
				if len(tc.Notes) == 0 {
					tc.Notes = nil
				}
				if c.Version == "" {
					c.Version = tc.Desired
				}
				c.Targets = append(c.Targets, tc)
				if slices.Index(severity, tc.State) > slices.Index(severity, c.State) {
					c.State = tc.State
				}
			}
			r.Cells[i] = c
		}
	}
	slices.Sort(names)
	for _, n := range names {
		m.Services = append(m.Services, *rows[n])
	}
	return m
}

// releaseWait reports whether e's apply in flight is deployed and waits for
// its release approval (the pending plan, on the same planHash).
func releaseWait(e *Environment) bool {
	return e.Pending != nil && e.Pending.Release && e.InFlight != nil && e.InFlight.PlanHash == e.Pending.PlanHash
}

func head(e *Environment, loc *time.Location) MatrixEnvironment {
	h := MatrixEnvironment{Name: e.Name, Phase: e.Phase, Revision: e.Revision, Unmanaged: len(e.Unmanaged), Error: e.Error}
	if e.InFlight != nil && !releaseWait(e) {
		h.Rolling = e.InFlight.PlanHash
	}
	if e.Pending != nil && e.Pending.PlanHash != h.Rolling {
		h.Pending, h.PendingRevision, h.Release = e.Pending.PlanHash, e.Pending.Revision, e.Pending.Release
		h.Approvals, h.Required = len(e.Pending.Approvals), e.Pending.Needed()
		h.Reasons = e.Pending.Reasons
	}
	if e.Phase == PhaseDeferred && e.Pending == nil && e.InFlight == nil && e.PlanHash != "" {
		h.Deferred, h.DeferredRevision = e.PlanHash, e.Revision
	}
	h.Waiting = e.Waiting
	if e.LastResult != nil {
		h.LastResult = e.LastResult.Result
	}
	for _, l := range e.Locks {
		if lock.IsReconcilerAuthor(l.Author) {
			continue // the reconciler's own lock while it applies: shown as rolling out
		}
		h.Locks = append(h.Locks, l.Path+": "+string(l.Type)+" by "+l.Author+" until "+l.ExpiresAt.In(loc).Format("Mon 2 Jan, 15:04"))
	}
	return h
}

// pendingPairs are the service/target pairs the pending plan changes.
func pendingPairs(e *Environment) map[string]bool {
	if e.Pending == nil {
		return nil
	}
	var p reconcile.Plan
	if json.Unmarshal(e.Pending.Plan, &p) != nil {
		return nil
	}
	return changedPairs(p.Changes)
}

func inFlightChanges(e *Environment) []reconcile.Change {
	if e.InFlight == nil {
		return nil
	}
	var cs []reconcile.Change
	_ = json.Unmarshal(e.InFlight.Changes, &cs) // undecodable: nothing shown as rolling
	return cs
}

// failedPairs are the pairs the last recorded apply changed, when it failed.
func failedPairs(e *Environment) map[string]bool {
	if e.LastResult == nil || e.LastResult.Result != approval.ResultFailed {
		return nil
	}
	var cs []reconcile.Change
	_ = json.Unmarshal(e.LastResult.Changes, &cs)
	return changedPairs(cs)
}

func changedPairs(cs []reconcile.Change) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		out[c.Service+"\x00"+c.Target] = true
	}
	return out
}

// tags writes the desired (or live) images of a target as their tags, or
// short digests when untagged, comma separated; "?" for an unknown live image.
func tags(images []Image, desired bool) string {
	var out []string
	for _, im := range images {
		ref := im.Live
		if desired {
			ref = im.Desired
		}
		t := Tag(ref)
		if t == "" {
			t = "?"
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return strings.Join(out, ", ")
}

// Tag is how an image reference is shown: its tag, else its digest's first
// twelve hex digits ("sha256:0123456789ab"), else "".
func Tag(ref string) string {
	name, digest, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	if digest != "" {
		if len(digest) > len("sha256:")+12 {
			digest = digest[:len("sha256:")+12]
		}
		return digest
	}
	return ""
}
