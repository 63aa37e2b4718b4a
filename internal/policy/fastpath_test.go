package policy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"
	"github.com/google/go-cmp/cmp"
)

// TestShortcutsTaken: the untracked program reads a variable and its declared fields, and takes the
// loop condition and the logical not, by the shortcuts; a presence test, a field behind dyn or an
// index is left to CEL's own steps (and the decision is CEL's, as the corpus and FuzzEvaluate hold).
func TestShortcutsTaken(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, when string
		// want are the attributes read by the shortcut (the accumulator of a scan in its condition,
		// step and result) and the loop conditions and negations it takes.
		want []string
	}{
		{"a scan of the changes", `plan.changes.exists(c, !(c.to.tag == "x"))`,
			[]string{"!_", "!_", "@not_strictly_false", "attr @result", "attr @result", "attr @result", "attr c.to.tag", "attr plan.changes"}},
		{"a presence test", `has(plan.changes) && plan.environment == "prod"`, []string{"attr plan.environment"}},
		{"a field behind dyn", `dyn(plan).changes.size() > 0`, []string{"attr plan"}},
		{"an index", `plan.changes[0].to.tag == "1.0.0"`, nil},
		{"history and now", `history.all(d, d.finished < now)`,
			[]string{"@not_strictly_false", "attr @result", "attr @result", "attr @result", "attr d.finished", "attr history", "attr now"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ast, iss := c.env.Compile(tc.when)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			var nodes []interpreter.Interpretable
			prg, err := c.env.Program(ast, cel.EvalOptions(cel.OptOptimize), shortcuts(c.provider, ast),
				cel.CustomDecorator(func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
					if !slices.Contains(nodes, i) {
						nodes = append(nodes, i)
					}
					return i, nil
				}))
			if err != nil {
				t.Fatal(err)
			}
			vars, err := activation(newArenas(c.provider).get(), bigInput(3))
			if err != nil {
				t.Fatal(err)
			}
			// The attributes work out their paths when first evaluated (the decision, right or
			// refused, is the corpus's concern).
			_, _, _ = prg.ContextEval(context.Background(), vars)
			var got []string
			for _, n := range nodes {
				switch n := n.(type) {
				case *fastAttr:
					if n.ok {
						path := []string{n.name}
						for _, s := range n.path {
							path = append(path, s.shape.fs[s.field].name)
						}
						got = append(got, "attr "+strings.Join(path, "."))
					}
				case notStrictlyFalse:
					got = append(got, "@not_strictly_false")
				case logicalNot:
					got = append(got, "!_")
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("shortcuts (-want +got):\n%s", diff)
			}
		})
	}
}
