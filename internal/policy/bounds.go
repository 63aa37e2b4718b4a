package policy

import (
	"math/bits"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
)

// The bounds under which a rule's cost is estimated when it is compiled: a rule whose estimate is within
// CostLimit runs without runtime cost tracking over an input within them (boundedInput); over a larger
// input every rule's cost is tracked.
const (
	// boundList bounds every list and map of the input: changes, services, history, locks, authors,
	// files, trailers and each trailer's values, a deploy's services.
	boundList = 1000
	// boundString bounds every string of the input, in code points.
	boundString = 512
)

// boundsEstimator tells CEL's cost estimate the size of every list and string a rule reads: the bounds.
// A list the rule makes (a filter, a map) is no longer than one it reads; CEL sizes concatenations
// itself.
type boundsEstimator struct{}

func (boundsEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	switch t := n.Type(); {
	case t.IsExactType(types.StringType):
		return &checker.SizeEstimate{Min: 0, Max: boundString}
	case t.Kind() == types.ListKind, t.Kind() == types.MapKind:
		return &checker.SizeEstimate{Min: 0, Max: boundList}
	}
	return nil
}

// EstimateCallCost leaves the helpers (isMajorBump, failures) at CEL's cost of a call, as the tracked
// program counts them; each is bounded by a string or the history.
func (boundsEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// boundedInput reports whether every list and string of in is within the bounds the rules' costs were
// estimated for.
func boundedInput(in Input) bool {
	p := in.Plan
	lists := len(p.Changes) <= boundList && len(p.Services) <= boundList && len(in.History) <= boundList &&
		len(in.Locks) <= boundList && len(in.Revision.Authors) <= boundList && len(in.Revision.Files) <= boundList &&
		len(in.Revision.Trailers) <= boundList
	if !lists || !short(p.Environment, in.Revision.SHA) || !short(p.Services...) || !short(in.Revision.Authors...) ||
		!short(in.Revision.Files...) {
		return false
	}
	for k, vs := range in.Revision.Trailers {
		if len(vs) > boundList || !short(k) || !short(vs...) {
			return false
		}
	}
	for _, c := range p.Changes {
		if !short(c.Service, c.Target, c.Workload, c.Container, c.From.Image, c.From.Repository, c.From.Tag, c.From.Digest,
			c.To.Image, c.To.Repository, c.To.Tag, c.To.Digest) {
			return false
		}
	}
	for _, d := range in.History {
		if len(d.Services) > boundList || !short(d.Revision, d.Result) || !short(d.Services...) {
			return false
		}
	}
	for _, l := range in.Locks {
		if !short(l.Service, l.Author, l.Type) {
			return false
		}
	}
	return true
}

// short reports whether every s is at most boundString code points long.
func short(ss ...string) bool {
	for _, s := range ss {
		if len(s) > boundString && utf8.RuneCountInString(s) > boundString {
			return false
		}
	}
	return true
}

// sizes are the lengths of the lists and maps of an input within the bounds, each rounded up to a power
// of two (so that a few estimates serve many inputs): a rule whose cost is over CostLimit for any input
// within the bounds (plan.services.exists(s, history.filter(d, s in d.services)…)) may be within it for
// a plan of 100 services and a history of 20 deploys, and run untracked over those.
type sizes struct {
	changes, services, authors, files, trailers, trailerValues, history, deployServices, locks int
}

// measure is the sizes of in, which is within the bounds.
func measure(in Input) sizes {
	s := sizes{changes: len(in.Plan.Changes), services: len(in.Plan.Services), authors: len(in.Revision.Authors),
		files: len(in.Revision.Files), trailers: len(in.Revision.Trailers), history: len(in.History), locks: len(in.Locks)}
	for _, vs := range in.Revision.Trailers {
		s.trailerValues = max(s.trailerValues, len(vs))
	}
	for _, d := range in.History {
		s.deployServices = max(s.deployServices, len(d.Services))
	}
	for _, n := range []*int{&s.changes, &s.services, &s.authors, &s.files, &s.trailers, &s.trailerValues, &s.history,
		&s.deployServices, &s.locks} {
		if *n > 1 {
			*n = 1 << bits.Len(uint(*n-1))
		}
	}
	return s
}

// sizesEstimator is boundsEstimator with the sizes of the input's lists and maps, by their path from
// the variables; what the rule makes itself keeps the bounds.
type sizesEstimator struct {
	boundsEstimator
	s sizes
}

func (e sizesEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if k := n.Type().Kind(); k != types.ListKind && k != types.MapKind {
		return e.boundsEstimator.EstimateSize(n)
	}
	var size int
	switch strings.Join(n.Path(), ".") {
	case "plan.changes":
		size = e.s.changes
	case "plan.services":
		size = e.s.services
	case "revision.authors":
		size = e.s.authors
	case "revision.files":
		size = e.s.files
	case "revision.trailers":
		size = e.s.trailers
	case "revision.trailers.@values":
		size = e.s.trailerValues
	case "history":
		size = e.s.history
	case "history.@items.services":
		size = e.s.deployServices
	case "locks":
		size = e.s.locks
	default:
		return e.boundsEstimator.EstimateSize(n)
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(size)}
}

// maxEstimates bounds how many sizes a rule keeps its estimate for.
const maxEstimates = 256

// estimates are a rule's cost estimates by the sizes of the input, made when first asked.
type estimates struct {
	env *cel.Env
	ast *cel.Ast
	mu  sync.Mutex
	fit map[sizes]bool
}

// within reports whether the rule's estimate over inputs of sizes s is within CostLimit.
func (e *estimates) within(s sizes) bool {
	e.mu.Lock()
	ok, known := e.fit[s]
	e.mu.Unlock()
	if known {
		return ok
	}
	est, err := e.env.EstimateCost(e.ast, sizesEstimator{s: s})
	ok = err == nil && est.Max <= CostLimit
	e.mu.Lock()
	if len(e.fit) < maxEstimates {
		e.fit[s] = ok
	}
	e.mu.Unlock()
	return ok
}
