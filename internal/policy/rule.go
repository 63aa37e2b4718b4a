package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
)

// Rule is one approval rule: when its when is true for a plan, the plan needs what it says.
type Rule struct {
	// Name names the rule in explanations and refusals.
	Name string `json:"name"`
	// When is a CEL expression of type bool over plan, revision, now, history and locks.
	When string `json:"when"`
	// Required is how many distinct approvers the plan needs at least (0: the rule asks no count).
	Required int `json:"required,omitempty"`
	// Teams and MinPermission: an approver must hold MinPermission on the repository or be a member of
	// one of Teams (either may be empty).
	Teams         []string `json:"teams,omitempty"`
	MinPermission string   `json:"minPermission,omitempty"`
	// ForbidAuthors keeps the authors of the commits deployed from approving.
	ForbidAuthors bool `json:"forbidAuthors,omitempty"`
	// Message is shown wherever the requirement or a refusal is ("payments-api changes need 2 approvers
	// from acme/payments").
	Message string `json:"message,omitempty"`
}

// Limits of a rule's expression, checked when it is compiled, and of one evaluation.
const (
	// MaxExpressionLength bounds a when in code points.
	MaxExpressionLength = 4096
	// MaxNesting bounds how deep a when's parse tree nests.
	MaxNesting = 32
	// CostLimit bounds the work of one rule's evaluation, in CEL's cost units (about one per operation;
	// a scan of 500 changes with a comparison costs a few thousand).
	CostLimit = 1_000_000
	// MaxRules bounds how many rules one environment has.
	MaxRules = 100
)

// CompileError is a rule whose when does not compile: Line and Column (1-based, in code points) say where.
type CompileError struct {
	Line, Column int
	Message      string
}

func (e *CompileError) Error() string {
	if e.Line == 0 {
		return e.Message
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// Program is one compiled rule.
type Program struct {
	Rule
	prg cel.Program
	// fast is the rule without the runtime cost tracking, taking shortcuts through CEL's interpreter
	// (shortcuts). It runs over an input within the bounds (boundedInput) when CEL's static estimate of
	// the rule's cost is within CostLimit over every such input (bounded) or over inputs of its sizes
	// (estimates, asked only when not bounded). Such an input cannot make it cost more than the tracked
	// program would allow, so it comes to the same decision; tracking costs several times what the
	// evaluation does (BenchmarkEvaluateTracked).
	fast      cel.Program
	bounded   bool
	estimates *estimates
}

// untracked reports whether the rule runs untracked over an input within the bounds of sizes s.
func (p *Program) untracked(s sizes) bool {
	return p.bounded || p.estimates.within(s)
}

// env is the CEL environment rules are compiled in: the variables of Input and the helpers, with the
// zones of the timestamp accessors loaded once (z).
func env(z *zones) (*cel.Env, *provider, error) {
	p := newProvider()
	opts := []cel.EnvOption{
		cel.CustomTypeProvider(p),
		cel.CustomTypeAdapter(p),
		ext.Strings(ext.StringsVersion(3)),
		cel.Variable("plan", planT),
		cel.Variable("revision", revisionT),
		cel.Variable("now", cel.TimestampType),
		cel.Variable("history", cel.ListType(deployT)),
		cel.Variable("locks", cel.ListType(lockT)),
		// The helpers check their arguments themselves: CEL's guard, which compares every argument's type
		// with the overload's at each call, is left out (an error or unknown argument is still passed on).
		cel.Function("isMajorBump", decls.DisableTypeGuards(true), cel.Overload("isMajorBump_change", []*cel.Type{changeT}, cel.BoolType,
			cel.UnaryBinding(bumpIs("isMajorBump", "major")))),
		cel.Function("isMinorBump", decls.DisableTypeGuards(true), cel.Overload("isMinorBump_change", []*cel.Type{changeT}, cel.BoolType,
			cel.UnaryBinding(bumpIs("isMinorBump", "minor")))),
		cel.Function("isPatchBump", decls.DisableTypeGuards(true), cel.Overload("isPatchBump_change", []*cel.Type{changeT}, cel.BoolType,
			cel.UnaryBinding(bumpIs("isPatchBump", "patch")))),
		cel.Function("failures", decls.DisableTypeGuards(true), cel.Overload("failures_history_int", []*cel.Type{cel.ListType(deployT), cel.IntType}, cel.IntType,
			cel.BinaryBinding(failures))),
		cel.ParserRecursionLimit(MaxNesting),
		cel.ParserExpressionSizeLimit(MaxExpressionLength),
	}
	e, err := cel.NewEnv(append(opts, z.functions()...)...)
	return e, p, err
}

// bumpIs is isMajorBump, isMinorBump or isPatchBump (name): whether the change's tag went up by that part.
func bumpIs(name, part string) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		r, _ := v.Value().(*record)
		c, ok := (*Change)(nil), false
		if r != nil {
			c, ok = r.v.(*Change)
		}
		if !ok {
			return types.NewErr("%s: want a change, got %s", name, v.Type())
		}
		return types.Bool(bump(c.From.Tag, c.To.Tag) == part)
	}
}

// failures counts the failed deploys among the newest n of a history.
func failures(list, n ref.Val) ref.Val {
	l, ok := list.(traits.Lister)
	if !ok {
		return types.NewErr("failures: want the history, got %s", list.Type())
	}
	limit, _ := n.Value().(int64)
	size, _ := l.Size().Value().(int64)
	count := 0
	for i := int64(0); i < size && i < limit; i++ {
		e := l.Get(types.Int(i))
		r, _ := e.Value().(*record)
		d, ok := (*Deploy)(nil), false
		if r != nil {
			d, ok = r.v.(*Deploy)
		}
		if !ok {
			return types.NewErr("failures: want the history, got a list of %s", e.Type())
		}
		if d.Result == "failed" {
			count++
		}
	}
	return types.Int(count)
}

// Compiler compiles rules; one serves every environment.
type Compiler struct {
	env      *cel.Env
	provider *provider
}

// NewCompiler builds the CEL environment of rules.
func NewCompiler() (*Compiler, error) { return newCompiler(newZones(time.LoadLocation)) }

// newCompiler is NewCompiler with the zones z.
func newCompiler(z *zones) (*Compiler, error) {
	e, p, err := env(z)
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment of approval rules: %w", err)
	}
	return &Compiler{env: e, provider: p}, nil
}

// Compile parses and type-checks r.When (it must be a bool) and plans its evaluation under CostLimit. An
// expression that does not compile gives a *CompileError naming the line and column.
func (c *Compiler) Compile(r Rule) (*Program, error) {
	if strings.TrimSpace(r.When) == "" {
		return nil, &CompileError{Message: "empty: want a CEL expression of type bool, e.g. plan.services.exists(s, s == \"payments-api\")"}
	}
	if n := utf8.RuneCountInString(r.When); n > MaxExpressionLength {
		return nil, &CompileError{Message: fmt.Sprintf("%d characters long: at most %d", n, MaxExpressionLength)}
	}
	ast, iss := c.env.Compile(r.When)
	if iss != nil && iss.Err() != nil {
		return nil, compileError(iss)
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, &CompileError{Line: 1, Column: 1, Message: fmt.Sprintf("has type %s: want bool", ast.OutputType())}
	}
	prg, err := c.env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &CompileError{Message: err.Error()}
	}
	out := &Program{Rule: r, prg: prg, estimates: &estimates{env: c.env, ast: ast, fit: map[sizes]bool{}}}
	if est, err := c.env.EstimateCost(ast, boundsEstimator{}); err == nil && est.Max <= CostLimit {
		out.bounded = true
	}
	if out.fast, err = c.env.Program(ast, cel.InterruptCheckFrequency(100), cel.EvalOptions(cel.OptOptimize),
		shortcuts(c.provider, ast)); err != nil {
		return nil, &CompileError{Message: err.Error()}
	}
	return out, nil
}

// compileError is the first of iss's errors with its place (1-based).
func compileError(iss *cel.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return &CompileError{Message: iss.String()}
	}
	e := errs[0]
	out := &CompileError{Message: e.Message}
	if loc := e.Location; loc != nil && loc.Line() > 0 {
		out.Line, out.Column = loc.Line(), loc.Column()+1
	}
	if len(errs) > 1 {
		out.Message += fmt.Sprintf(" (and %d more errors)", len(errs)-1)
	}
	return out
}

// ErrCompile is matched by every *CompileError.
var ErrCompile = errors.New("approval rule does not compile")

// Is makes errors.Is(err, ErrCompile) true.
func (e *CompileError) Is(target error) bool { return target == ErrCompile }
