package policy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
)

// TestZoneAccessors: the timestamp accessors that take a zone answer as CEL's own do, for names,
// offsets and what is neither, in every part.
func TestZoneAccessors(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	stock, err := cel.NewEnv(cel.Variable("now", cel.TimestampType))
	if err != nil {
		t.Fatal(err)
	}
	accessors := []string{"getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
		"getMinutes", "getSeconds", "getMilliseconds"}
	zones := []string{"Europe/London", "America/Los_Angeles", "Asia/Kolkata", "UTC", "", "+05:30", "-08:00", "05:30", "-00:45",
		"+14:00", "Nowhere/Atlantis", "../etc/passwd", "x:00", "1:y", ":", "Europe/London:"}
	times := []time.Time{time.Date(2026, 12, 31, 23, 59, 59, 999_000_000, time.UTC), time.Date(2026, 3, 29, 0, 30, 0, 123_000_000, time.UTC)}
	for _, a := range accessors {
		for _, z := range zones {
			when := fmt.Sprintf("now.%s(%q)", a, z)
			ast, iss := stock.Compile(when)
			if iss.Err() != nil {
				t.Fatalf("%s: %v", when, iss.Err())
			}
			prg, err := stock.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			for _, now := range times {
				wv, _, werr := prg.Eval(map[string]any{"now": now})
				for _, cmpWith := range []string{"==", "!="} {
					// The rule is true when the accessor gives CEL's value (==) and false otherwise (!=);
					// an error must be CEL's error.
					rule := fmt.Sprintf("%s %s %v", when, cmpWith, wv)
					if werr != nil {
						rule = when + " == 0"
					}
					s, err := NewSet(c, []Rule{{Name: "r", When: rule}})
					if err != nil {
						t.Fatalf("%s: %v", rule, err)
					}
					_, outcomes, err := s.Evaluate(context.Background(), Input{Now: now})
					got := fmt.Sprint(outcomes[0].Applied)
					if err != nil {
						got = outcomes[0].Error
					}
					want := fmt.Sprint(cmpWith == "==")
					if werr != nil {
						want = werr.Error()
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s at %v (-CEL's +ours):\n%s", rule, now, diff)
					}
				}
			}
		}
	}
}

// TestZoneLoadedOnce: a zone a rule names is loaded once for a Compiler, not at every decision; a name
// that is no zone is not kept.
func TestZoneLoadedOnce(t *testing.T) {
	loads := map[string]int{}
	c, err := newCompiler(newZones(func(name string) (*time.Location, error) {
		loads[name]++
		return time.LoadLocation(name)
	}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(c, []Rule{
		{Name: "friday", When: `now.getDayOfWeek("Europe/London") == 5 && now.getHours("Europe/London") >= 15`},
		{Name: "nowhere", When: `revision.trailers["Zone"].exists(z, now.getHours(z) > 0)`},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Now: time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC), Revision: Revision{Trailers: map[string][]string{"Zone": {"Nowhere/Atlantis"}}}}
	for range 3 {
		if _, _, err := s.Evaluate(context.Background(), in); err == nil {
			t.Fatal("a rule naming no zone was judged")
		}
	}
	if diff := cmp.Diff(map[string]int{"Europe/London": 1, "Nowhere/Atlantis": 3}, loads); diff != "" {
		t.Errorf("loads by zone (-want +got):\n%s", diff)
	}
}
