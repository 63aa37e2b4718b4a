package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestBoundedInput(t *testing.T) {
	long := strings.Repeat("a", boundString+1)
	wide := strings.Repeat("é", boundString) // 1024 bytes, 512 code points
	for _, tc := range []struct {
		name string
		in   func() Input
		want bool
	}{
		{"500 changes", func() Input { return bigInput(500) }, true},
		{"1000 changes", func() Input { return bigInput(boundList) }, true},
		{"1001 changes", func() Input { return bigInput(boundList + 1) }, false},
		{"a long image", func() Input { in := bigInput(5); in.Plan.Changes[3].To.Image = long; return in }, false},
		{"512 code points in 1024 bytes", func() Input { in := bigInput(5); in.Plan.Changes[3].To.Tag = wide; return in }, true},
		{"a long author", func() Input { in := bigInput(5); in.Revision.Authors = append(in.Revision.Authors, long); return in }, false},
		{"a deploy of many services", func() Input {
			in := bigInput(5)
			in.History[0].Services = make([]string, boundList+1)
			return in
		}, false},
		{"a long lock author", func() Input { in := bigInput(5); in.Locks[0].Author = long; return in }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := boundedInput(tc.in()); got != tc.want {
				t.Errorf("boundedInput = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnboundedInputIsTracked: a rule cheap enough over inputs within the bounds runs untracked there,
// but over a larger input (300 changes of 40 KB images) its cost is tracked and the cost limit stops it,
// as it would have without the untracked path.
func TestUnboundedInputIsTracked(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(c, []Rule{{Name: "contains", When: `plan.changes.all(c, c.to.image.contains("r"))`, Required: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if s.programs[0].fast == nil {
		t.Fatal("the rule has no untracked program: its estimate is over the cost limit")
	}
	img := strings.Repeat("r", 40<<10)
	in := bigInput(300)
	for i := range in.Plan.Changes {
		in.Plan.Changes[i].From, in.Plan.Changes[i].To = ParseImage(img), ParseImage(img)
	}
	if _, _, err := s.Evaluate(context.Background(), in); !errors.Is(err, ErrEval) || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("Evaluate over an unbounded input = %v, want the cost limit", err)
	}
	if _, _, err := s.Evaluate(context.Background(), bigInput(300)); err != nil {
		t.Errorf("Evaluate over a bounded input: %v", err)
	}
}
