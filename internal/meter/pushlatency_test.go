package meter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPushTimes: a push is measured to the first patch of the revision the
// next snapshot brought, once per environment; a pass over that revision
// that patched nothing (nothing changed, or a plan waits for a person) ends
// the wait; a revision found by a poll without a push is never measured; a
// second push before the snapshot counts from the first.
func TestPushTimes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type event struct {
		push            int    // ms; 0: none
		offer           string // a revision offered to devel and prod
		patch, pass     string // env/revision
		atMS            int
		isPatch, isPass bool
	}
	tests := []struct {
		name   string
		events []event
		want   []time.Duration // what patched observed, in order
	}{
		{name: "push, snapshot, patch in devel", events: []event{
			{push: 1}, {offer: "r1"}, {isPatch: true, patch: "devel/r1", atMS: 101},
		}, want: []time.Duration{100 * time.Millisecond}},
		{name: "measured once per environment", events: []event{
			{push: 1}, {offer: "r1"}, {isPatch: true, patch: "devel/r1", atMS: 51}, {isPatch: true, patch: "devel/r1", atMS: 71},
			{isPatch: true, patch: "prod/r1", atMS: 91},
		}, want: []time.Duration{50 * time.Millisecond, 90 * time.Millisecond}},
		{name: "a poll without a push", events: []event{
			{offer: "r1"}, {isPatch: true, patch: "devel/r1", atMS: 10},
		}},
		{name: "a pass that patched nothing ends the wait", events: []event{
			{push: 1}, {offer: "r1"}, {isPass: true, pass: "prod/r1"}, {isPatch: true, patch: "prod/r1", atMS: 5000},
		}},
		{name: "a pass over another revision does not", events: []event{
			{push: 1}, {offer: "r2"}, {isPass: true, pass: "devel/r1"}, {isPatch: true, patch: "devel/r2", atMS: 31},
		}, want: []time.Duration{30 * time.Millisecond}},
		{name: "two pushes before the snapshot count from the first", events: []event{
			{push: 10}, {push: 20}, {offer: "r1"}, {isPatch: true, patch: "devel/r1", atMS: 110},
		}, want: []time.Duration{100 * time.Millisecond}},
		{name: "a newer revision while one is awaited counts from the first push", events: []event{
			{push: 10}, {offer: "r1"}, {push: 20}, {offer: "r2"}, {isPatch: true, patch: "devel/r1", atMS: 50},
			{isPatch: true, patch: "devel/r2", atMS: 110},
		}, want: []time.Duration{100 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pushTimes
			var got []time.Duration
			for _, e := range tc.events {
				switch {
				case e.push != 0:
					p.push(at(e.push))
				case e.offer != "":
					p.offered(e.offer, []string{"devel", "prod"})
				case e.isPatch:
					env, rev := split(e.patch)
					if d, ok := p.patched(env, rev, at(e.atMS)); ok {
						got = append(got, d)
					}
				case e.isPass:
					env, rev := split(e.pass)
					p.passed(env, rev)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
		})
	}
}

func split(s string) (string, string) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}
