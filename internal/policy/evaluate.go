package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Set is one environment's compiled rules, in their configured order.
type Set struct {
	programs []*Program
	// arenas keep the memory of the variables' values between decisions.
	arenas *arenas
	// tracked evaluates every rule with its cost tracked (tests compare both ways).
	tracked bool
}

// NewSet compiles rules with c; the error of the first that does not compile names its index.
func NewSet(c *Compiler, rules []Rule) (*Set, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%d approval rules: at most %d", len(rules), MaxRules)
	}
	s := &Set{arenas: newArenas(c.provider)}
	for i, r := range rules {
		p, err := c.Compile(r)
		if err != nil {
			return nil, fmt.Errorf("rules[%d] (%s).when: %w", i, r.Name, err)
		}
		s.programs = append(s.programs, p)
	}
	return s, nil
}

// Len is how many rules the set holds (0 for nil).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.programs)
}

// Requirement is what the rules that apply to a plan ask together, the strictest of each: the largest
// Required, the union of Teams, the highest MinPermission, ForbidAuthors if any asks it.
type Requirement struct {
	Required      int      `json:"required,omitempty"`
	Teams         []string `json:"teams,omitempty"`
	MinPermission string   `json:"minPermission,omitempty"`
	ForbidAuthors bool     `json:"forbidAuthors,omitempty"`
	// Applied are the rules whose when was true, in configured order.
	Applied []Applied `json:"applied,omitempty"`
}

// Applied is one rule that applied: its name and message.
type Applied struct {
	Rule    string `json:"rule"`
	Message string `json:"message,omitempty"`
}

// Restricts reports whether the requirement limits who may approve (teams or a permission).
func (r Requirement) Restricts() bool { return len(r.Teams) > 0 || r.MinPermission != "" }

// Messages are the applied rules' messages (their names where they have none).
func (r Requirement) Messages() []string {
	var out []string
	for _, a := range r.Applied {
		if a.Message != "" {
			out = append(out, a.Message)
		} else {
			out = append(out, "rule "+a.Rule+" applies")
		}
	}
	return out
}

// Outcome is one rule's evaluation, for explanations: whether it applied, or the error that stopped it.
type Outcome struct {
	Rule    string `json:"rule"`
	Applied bool   `json:"applied"`
	Error   string `json:"error,omitempty"`
}

// EvalError is a rule that could not be evaluated (an error at run time, the cost limit, a cancelled
// context): the decision it belongs to is refused.
type EvalError struct {
	Rule string
	Err  error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("approval rule %q could not be evaluated: %v", e.Rule, e.Err)
}

func (e *EvalError) Unwrap() error { return e.Err }

// Evaluate runs every rule over in and combines those that apply. It evaluates them all, also after one
// fails, so that outcomes explain each; the error is the first *EvalError, and the Requirement must not
// be used then: a plan whose rules cannot be judged may not be approved.
func (s *Set) Evaluate(ctx context.Context, in Input) (Requirement, []Outcome, error) {
	var req Requirement
	if s.Len() == 0 {
		return req, nil, nil
	}
	a := s.arenas.get()
	vars, err := activation(a, in)
	if err != nil {
		return req, nil, err
	}
	outcomes := make([]Outcome, 0, len(s.programs))
	bounded := !s.tracked && boundedInput(in)
	var sz sizes
	if bounded {
		sz = measure(in)
	}
	var first error
	for _, p := range s.programs {
		o := Outcome{Rule: p.Name}
		prg := p.prg
		if bounded && p.untracked(sz) {
			prg = p.fast
		}
		applies, err := eval(ctx, prg, vars)
		switch {
		case err != nil:
			o.Error = err.Error()
			if first == nil {
				first = &EvalError{Rule: p.Name, Err: err}
			}
		case applies:
			o.Applied = true
			req.add(p.Rule)
		}
		outcomes = append(outcomes, o)
	}
	if first != nil {
		// The arena is left to the collector: an error may refer to a value made in it.
		return Requirement{}, outcomes, first
	}
	s.arenas.release(a)
	return req, outcomes, nil
}

// eval is a rule's when (prg) over vars.
func eval(ctx context.Context, prg cel.Program, vars cel.Activation) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("when gave %s, not a bool", out.Type())
	}
	return bool(b), nil
}

// activation binds in's values, made in a, to the variables, once for every rule of a decision.
func activation(a *arena, in Input) (cel.Activation, error) {
	history, locks := in.History, in.Locks
	if history == nil {
		history = []Deploy{}
	}
	if locks == nil {
		locks = []Lock{}
	}
	plan := in.Plan
	if plan.Changes == nil {
		plan.Changes = []Change{}
	}
	if plan.Services == nil {
		plan.Services = []string{}
	}
	rev := in.Revision
	if rev.Authors == nil {
		rev.Authors = []string{}
	}
	if rev.Files == nil {
		rev.Files = []string{}
	}
	vars, err := cel.NewActivation(map[string]any{
		"plan":     a.record(planT, &plan),
		"revision": a.record(revisionT, &rev),
		"now":      types.Timestamp{Time: in.Now},
		"history":  list(a, deployT, history),
		"locks":    list(a, lockT, locks),
	})
	if err != nil {
		return nil, fmt.Errorf("binding the variables of approval rules: %w", err)
	}
	return vars, nil
}

// add makes r part of the requirement.
func (req *Requirement) add(r Rule) {
	req.Required = max(req.Required, r.Required)
	for _, t := range r.Teams {
		if !slices.ContainsFunc(req.Teams, func(x string) bool { return strings.EqualFold(x, t) }) {
			req.Teams = append(req.Teams, t)
		}
	}
	if PermissionRank(r.MinPermission) > PermissionRank(req.MinPermission) {
		req.MinPermission = r.MinPermission
	}
	req.ForbidAuthors = req.ForbidAuthors || r.ForbidAuthors
	req.Applied = append(req.Applied, Applied{Rule: r.Name, Message: r.Message})
}

// PermissionRank orders GitHub repository permissions: read < triage < write < maintain < admin; "" and
// unknown ones are 0.
func PermissionRank(p string) int {
	return slices.Index([]string{"read", "triage", "write", "maintain", "admin"}, p) + 1
}

// ErrEval is matched by every *EvalError.
var ErrEval = errors.New("approval rule could not be evaluated")

// Is makes errors.Is(err, ErrEval) true.
func (e *EvalError) Is(target error) bool { return target == ErrEval }

// ReadsLocks reports whether a rule reads locks, which are listed only then.
func (s *Set) ReadsLocks() bool {
	if s == nil {
		return false
	}
	for _, p := range s.programs {
		if strings.Contains(p.When, "locks") {
			return true
		}
	}
	return false
}

// ReadsRange reports whether a rule reads revision.files or revision.trailers, which cost a walk of the
// commits and their trees: they are listed only then.
func (s *Set) ReadsRange() bool {
	if s == nil {
		return false
	}
	for _, p := range s.programs {
		if strings.Contains(p.When, "files") || strings.Contains(p.When, "trailers") {
			return true
		}
	}
	return false
}

// ReadsAuthors reports whether a rule reads revision.authors, which costs a walk of the commits (and,
// with GitHub, requests): they are listed only then.
func (s *Set) ReadsAuthors() bool {
	if s == nil {
		return false
	}
	for _, p := range s.programs {
		if strings.Contains(p.When, "authors") {
			return true
		}
	}
	return false
}
