package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	if !s.programs[0].bounded {
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

// TestSizedEstimates: a rule whose cost may pass the limit over some input within the bounds runs
// untracked over an input of sizes for which CEL's estimate is within it, and tracked (stopped by the
// limit, if it comes to that) over larger ones.
func TestSizedEstimates(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(c, []Rule{
		{Name: "failed-twice", When: `plan.services.exists(s, history.filter(d, d.result == "failed" && s in d.services && now - d.finished < duration("168h")).size() >= 2)`},
		{Name: "cubic", When: `plan.changes.all(a, plan.changes.all(b, plan.changes.all(c, a.service != "" && b.service != "" && c.service != "")))`},
	})
	if err != nil {
		t.Fatal(err)
	}
	failedTwice, cubic := s.programs[0], s.programs[1]
	if failedTwice.bounded || cubic.bounded {
		t.Fatal("the rules' estimates over every input within the bounds are within the cost limit: nothing to test")
	}
	wide := bigInput(500)
	wide.Plan.Services = make([]string, boundList)
	for i := range wide.History {
		wide.History[i].Services = make([]string, boundList)
	}
	for _, tc := range []struct {
		name              string
		in                Input
		failedTwice, cube bool
	}{
		{"100 services, 20 deploys of 2", bigInput(500), true, false},
		{"4 changes", bigInput(4), true, true},
		{"1000 services, 20 deploys of 1000", wide, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sz := measure(tc.in)
			if got := failedTwice.untracked(sz); got != tc.failedTwice {
				t.Errorf("failed-twice untracked = %v, want %v", got, tc.failedTwice)
			}
			if got := cubic.untracked(sz); got != tc.cube {
				t.Errorf("cubic untracked = %v, want %v", got, tc.cube)
			}
		})
	}
	if _, _, err := s.Evaluate(context.Background(), bigInput(500)); !errors.Is(err, ErrEval) || !strings.Contains(err.Error(), `"cubic"`) ||
		!strings.Contains(err.Error(), "cost limit") {
		t.Errorf("Evaluate = %v, want the cubic rule stopped by the cost limit", err)
	}
}

// TestBenchRulesAgree: the benchmark's rules come to the same outcomes untracked (as far as their
// estimates allow) as tracked.
func TestBenchRulesAgree(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(c, benchRules())
	if err != nil {
		t.Fatal(err)
	}
	in := bigInput(500)
	in.Plan.Changes[7].To = ParseImage("registry.acme.com/legacy/app:2.0.0")
	in.Plan.Changes[9].Container = "init:migrate"
	req, outcomes, err := s.Evaluate(context.Background(), in)
	tracked := *s
	tracked.tracked = true
	treq, toutcomes, terr := tracked.Evaluate(context.Background(), in)
	if diff := cmp.Diff(fmt.Sprint(req, outcomes, err), fmt.Sprint(treq, toutcomes, terr)); diff != "" {
		t.Errorf("untracked and tracked decisions differ (-untracked +tracked):\n%s", diff)
	}
	sz := measure(in)
	for _, p := range s.programs {
		if !p.untracked(sz) {
			t.Errorf("rule %s (%s) is tracked over the benchmark's input", p.Name, p.When)
		}
	}
}
