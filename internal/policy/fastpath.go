package policy

import (
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// The untracked program of a rule (Program.fast) takes three shortcuts through CEL's interpreter where
// a rule spends most of its time, each giving what the step it replaces gives and handing anything else
// (an error, an unknown, a value that is no record) back to that step:
//   - a variable and the fields selected of it (c.to.tag, plan.changes, the accumulator of exists) are
//     read from the activation and the records directly, without CEL's attribute resolution, which
//     walks its qualifiers through interfaces and adapts each value twice;
//   - @not_strictly_false, the loop condition of exists and all, without the type guard of its overload;
//   - the logical not of a bool.
// The tracked program keeps CEL's own steps: its cost is counted by them.

// selection is one field selection of a checked rule: the declared type of the operand (nil when it
// is none), the field, whether it is a presence test (has).
type selection struct {
	shape    *shape
	field    int
	testOnly bool
}

// shortcuts is the decorator of a rule's untracked program, with the field selections of its checked
// expression by id.
func shortcuts(p *provider, checked *cel.Ast) cel.ProgramOption {
	native := checked.NativeRep()
	sels := map[int64]selection{}
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.SelectKind {
			return
		}
		sel := e.AsSelect()
		s := selection{field: -1, testOnly: sel.IsTestOnly()}
		if t := native.GetType(sel.Operand().ID()); t != nil && t.Kind() == types.StructKind {
			if sh, ok := p.shapes[t.TypeName()]; ok {
				s.shape = sh
				for i, f := range sh.fs {
					if f.name == sel.FieldName() {
						s.field = i
					}
				}
			}
		}
		sels[e.ID()] = s
	}))
	return cel.CustomDecorator(func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
		switch n := i.(type) {
		case *fastAttr:
			return n, nil
		case interpreter.InterpretableAttribute:
			return &fastAttr{InterpretableAttribute: n, sels: sels}, nil
		case interpreter.InterpretableCall:
			args := n.Args()
			switch {
			case len(args) != 1:
			case n.Function() == operators.NotStrictlyFalse:
				return notStrictlyFalse{InterpretableCall: n, arg: args[0]}, nil
			case n.Function() == operators.LogicalNot:
				return logicalNot{InterpretableCall: n, arg: args[0]}, nil
			}
		}
		return i, nil
	})
}

// fastAttr is a variable and the fields selected of it. The planner adds the selections to the
// attribute after it was decorated, so the path is worked out at the first evaluation.
type fastAttr struct {
	interpreter.InterpretableAttribute
	sels map[int64]selection
	once sync.Once
	// ok: the attribute is a variable and declared fields of it (otherwise CEL's own step is taken).
	ok   bool
	name string
	path []selection
}

// plan works out the variable and the fields of the attribute.
func (a *fastAttr) plan() {
	attr, isNamed := a.Attr().(interpreter.NamespacedAttribute)
	if !isNamed || a.IsOptional() || len(attr.CandidateVariableNames()) != 1 {
		return
	}
	for _, q := range attr.Qualifiers() {
		s, isSel := a.sels[q.ID()]
		if !isSel || s.shape == nil || s.field < 0 || s.testOnly || q.IsOptional() {
			return
		}
		a.path = append(a.path, s)
	}
	a.name, a.ok = attr.CandidateVariableNames()[0], true
}

// Eval reads the variable and the fields of its records.
func (a *fastAttr) Eval(vars interpreter.Activation) ref.Val {
	a.once.Do(a.plan)
	if !a.ok {
		return a.InterpretableAttribute.Eval(vars)
	}
	v, found := vars.ResolveName(a.name)
	val, isVal := v.(ref.Val)
	if !found || !isVal {
		return a.InterpretableAttribute.Eval(vars)
	}
	for _, s := range a.path {
		o, isObj := val.(obj)
		if !isObj || o.shape != s.shape {
			return a.InterpretableAttribute.Eval(vars)
		}
		val = o.get(s.field)
	}
	switch val.(type) {
	case *types.Err, *types.Unknown, *types.Optional:
		return a.InterpretableAttribute.Eval(vars)
	}
	return val
}

// notStrictlyFalse is @not_strictly_false: a bool as it is, an error or unknown as true.
type notStrictlyFalse struct {
	interpreter.InterpretableCall
	arg interpreter.Interpretable
}

func (n notStrictlyFalse) Eval(vars interpreter.Activation) ref.Val {
	switch v := n.arg.Eval(vars).(type) {
	case types.Bool:
		return v
	case *types.Err, *types.Unknown:
		return types.True
	}
	return n.InterpretableCall.Eval(vars)
}

// logicalNot is !b of a bool.
type logicalNot struct {
	interpreter.InterpretableCall
	arg interpreter.Interpretable
}

func (n logicalNot) Eval(vars interpreter.Activation) ref.Val {
	if b, ok := n.arg.Eval(vars).(types.Bool); ok {
		return !b
	}
	return n.InterpretableCall.Eval(vars)
}
