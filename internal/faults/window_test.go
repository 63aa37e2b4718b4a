package faults

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestWindowClockSkew: a freeze ends at freezeEnd on the API server's clock. replica-a runs two hours
// ahead (its own clock says the freeze ended long ago) and replica-b two hours behind (its own clock says
// the freeze has not begun): judged on their own clocks either would apply the skipConfirmation plan at
// once. Both judge it on the API server's clock: the leader defers it and says until freezeEnd, the
// standby shows the same, the standby taking over after the leader is killed keeps it deferred, and it is
// applied once, when the freeze ends, by its timer.
func TestWindowClockSkew(t *testing.T) {
	const n = 3
	f := newFixture(t, manifest(n, "1.0.0"))
	f.workloads(t, n)
	ctx := t.Context()
	// Long enough for both replicas to start, the plan to be deferred, and the takeover; the timer,
	// not a sleep, applies it at the end.
	freezeEnd := time.Now().Add(75 * time.Second).Truncate(time.Second).UTC()
	f.config["environments"].(map[string]any)["devel"].(map[string]any)["windows"] = map[string]any{
		"deny": []any{map[string]any{"name": "year-end", "from": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
			"to": freezeEnd.Format(time.RFC3339)}}}

	a := f.start(t, "replica-a", nil, offsetEnv(skew))
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	b := f.start(t, "replica-b", nil, offsetEnv(-skew))
	for _, c := range []struct {
		r    *replica
		want time.Duration
	}{{a, -skew}, {b, skew}} {
		testenv.WaitFor(t, 60*time.Second, c.r.name+" measuring the API server's clock "+c.want.String()+" from its own", func() bool {
			return math.Abs(c.r.metric(ctx, "stagehand_clock_offset_seconds")-c.want.Seconds()) < 2
		})
	}
	rev2 := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "to 2.0.0 inside the freeze")
	want := "waiting for the deploy window (inside the deny window year-end): opens " + freezeEnd.Format("Mon 2 Jan 2006 15:04") + " UTC"

	// deferred reads devel through r's API: Deferred at rev2, waiting until freezeEnd, observed after since.
	deferred := func(r *replica, since time.Time) (bool, string) {
		var v struct {
			Phase      string    `json:"phase"`
			Revision   string    `json:"revision"`
			Waiting    []string  `json:"waiting"`
			ObservedAt time.Time `json:"observedAt"`
		}
		if r.get(ctx, f.token, "/api/v1/environments/devel", &v) != http.StatusOK {
			return false, "unreadable"
		}
		got := fmt.Sprintf("phase %s at %.8s observed %s, waiting %q", v.Phase, v.Revision, v.ObservedAt.Format(time.RFC3339), v.Waiting)
		return v.Phase == "Deferred" && v.Revision == rev2 && v.ObservedAt.After(since) && len(v.Waiting) == 1 && v.Waiting[0] == want, got
	}
	unchanged := func(when string) {
		t.Helper()
		imgs, err := f.images(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if imgs[svc(i)] != image(i, "1.0.0") {
				t.Fatalf("%s: %s runs %s inside the freeze (%s before it ends on the API server's clock)", when, svc(i), imgs[svc(i)],
					time.Until(freezeEnd).Round(time.Second))
			}
		}
	}
	committed := time.Now()
	for _, r := range []*replica{a, b} {
		var last string
		testenv.WaitFor(t, 30*time.Second, r.name+" showing devel deferred until "+freezeEnd.Format(time.RFC3339), func() bool {
			ok, got := deferred(r, committed.Add(-time.Second))
			last = got
			return ok
		})
		t.Logf("%s: %s", r.name, last)
	}
	unchanged("replica-a (+2 h) leading")

	// The leader dies; replica-b (-2 h) takes over and judges the freeze the same.
	a.kill(t)
	killed := time.Now()
	testenv.WaitFor(t, 30*time.Second, "replica-b holding the Lease", func() bool { return f.holder(ctx) == "replica-b" })
	testenv.WaitFor(t, 30*time.Second, "a pass of replica-b keeping devel deferred", func() bool {
		ok, _ := deferred(b, killed)
		return ok
	})
	unchanged("replica-b (-2 h) leading")
	if time.Now().After(freezeEnd) {
		t.Fatalf("the freeze ended before replica-b's pass was seen: the case needs a longer freeze on this machine")
	}

	f.applied(t, b, n, "2.0.0", rev2, time.Until(freezeEnd)+45*time.Second)
	hist, ok := f.history(ctx, b)
	if !ok {
		t.Fatal("replica-b's history unreadable")
	}
	var entries []string
	for _, e := range hist {
		if e.Revision == rev2 {
			entries = append(entries, e.Result)
			if e.Started.Before(freezeEnd) {
				t.Errorf("rev2 applied from %s, before the freeze ended at %s on the API server's clock", e.Started, freezeEnd)
			}
		}
	}
	if strings.Join(entries, ",") != "succeeded" {
		t.Errorf("history of rev2: %v, want one succeeded entry", entries)
	}
	late := time.Since(freezeEnd)
	table.add(t, row{fault: "9 a freeze judged by replicas ±2 h off", survived: true, recover: late,
		note: "both defer the skipConfirmation plan and show the same end (the API server's clock), across a takeover; seconds from the freeze's end to the apply"})
}
