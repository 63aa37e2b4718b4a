package policy

import (
	"unicode/utf8"

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
