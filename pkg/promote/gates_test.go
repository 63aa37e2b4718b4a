package promote

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// twoStages builds devel (checkout-api at devTag, payments-api at 2.0.0) and
// staging (both at 1.0.0 / 2.0.0).
func twoStages(devTag string) fstest.MapFS {
	return fstest.MapFS{
		"environments/devel/manifest.json":   file(`{"services": [{"name": "checkout-api", "containers": [{"dockerTag": "` + devTag + `"}]}, {"name": "payments-api", "containers": [{"dockerTag": "2.0.0"}]}]}`),
		"environments/staging/manifest.json": file(`{"services": [{"name": "checkout-api", "containers": [{"dockerTag": "1.0.0"}]}, {"name": "payments-api", "containers": [{"dockerTag": "2.0.0"}]}]}`),
	}
}

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday
	pair := Pair{"devel", "staging"}
	target := resolve(t, twoStages("1.0.0"), "staging")
	obs := func(commit, tag string, check *Check) Observation {
		return Observation{Commit: commit, Stage: resolve(t, twoStages(tag), "devel"), Check: check}
	}
	ok := func(ago time.Duration) *Check {
		return &Check{ID: 1, Conclusion: "success", URL: "https://github.example/checks/1", CompletedAt: now.Add(-ago)}
	}
	failed := &Check{ID: 2, Conclusion: "failure", CompletedAt: now.Add(-time.Minute)}
	healthy := Stage{Name: "staging", PromoteFrom: "devel", Requires: Requires{Healthy: true}}
	soak := Stage{Name: "staging", PromoteFrom: "devel", Requires: Requires{Healthy: true, Soak: time.Hour}}
	p, err := Parse("p.yaml", []byte("stages: [{name: devel}, {name: staging, promoteFrom: devel, window: {schedule: '0 9 * * 1-5', duration: 2h}}]"))
	if err != nil {
		t.Fatal(err)
	}
	windowed := p.Stages[1]
	warned := &Check{ID: 3, Conclusion: "neutral", Result: ResultWarning, CompletedAt: now.Add(-2 * time.Minute)}
	superseded := &Check{ID: 4, Conclusion: "neutral", CompletedAt: now.Add(-2 * time.Minute)}
	warnOK := Stage{Name: "staging", PromoteFrom: "devel", Requires: Requires{Healthy: true},
		TriggeredOn: &Trigger{Stage: "devel", Sequence: SequenceName, Result: ResultWarning}}
	passOnly := Stage{Name: "staging", PromoteFrom: "devel", Requires: Requires{Healthy: true},
		TriggeredOn: &Trigger{Stage: "devel", Sequence: SequenceName, Result: ResultPass}}

	type result struct {
		Blocked string
		Source  string
		Tags    []string // "service tag" promoted now
		Held    []Held
	}
	tests := []struct {
		name    string
		stage   Stage
		history []Observation
		locks   []string
		frozen  string
		want    result
	}{{
		name:    "healthy head is promoted",
		stage:   healthy,
		history: []Observation{obs("c3", "1.1.0", ok(time.Minute))},
		want:    result{Source: "c3", Tags: []string{"checkout-api 1.1.0"}},
	}, {
		name:    "no successful check: nothing promoted, reason given",
		stage:   healthy,
		history: []Observation{obs("c3", "1.1.0", failed), obs("c2", "1.1.0", nil)},
		want:    result{Held: []Held{{Service: "checkout-api", Reason: "not healthy: no successful stagehand/devel check run on the 2 newest commit(s)"}}},
	}, {
		name:    "newest healthy commit wins; newer versions wait",
		stage:   healthy,
		history: []Observation{obs("c3", "1.2.0", nil), obs("c2", "1.1.0", ok(time.Minute))},
		want: result{Source: "c2", Tags: []string{"checkout-api 1.1.0"},
			Held: []Held{{Service: "checkout-api", Reason: "newer versions at c3 are not healthy yet (no successful stagehand/devel check run there)"}}},
	}, {
		name:    "soaking",
		stage:   soak,
		history: []Observation{obs("c3", "1.1.0", ok(10*time.Minute))},
		want: result{Source: "c3", Held: []Held{{Service: "checkout-api", Reason: "soaking: healthy in devel for 10m0s of 1h0m0s",
			Until: now.Add(50 * time.Minute)}}},
	}, {
		name:  "soak counts from the first success with the same versions",
		stage: soak,
		history: []Observation{
			obs("c4", "1.1.0", ok(time.Minute)), obs("c3", "1.1.0", nil), obs("c2", "1.1.0", ok(2*time.Hour)), obs("c1", "1.0.0", ok(3*time.Hour)),
		},
		want: result{Source: "c4", Tags: []string{"checkout-api 1.1.0"}},
	}, {
		name:    "soak over, but a newer sequence with the same versions failed: held",
		stage:   soak,
		history: []Observation{obs("c4", "1.1.0", failed), obs("c3", "1.1.0", ok(2*time.Hour))},
		want: result{Source: "c3", Held: []Held{{Service: "checkout-api",
			Reason: "not healthy any more: the devel sequence of c4, running these versions, finished with fail at 2026-11-23T11:59:00Z"}}},
	}, {
		name:    "a newer neutral check (a superseded plan, or a warning) does not hold",
		stage:   healthy,
		history: []Observation{obs("c4", "1.1.0", &Check{Conclusion: "neutral", CompletedAt: now}), obs("c3", "1.1.0", ok(2*time.Hour))},
		want:    result{Source: "c3", Tags: []string{"checkout-api 1.1.0"}},
	}, {
		name:    "a newer failure of other versions does not hold what passed",
		stage:   soak,
		history: []Observation{obs("c4", "1.2.0", failed), obs("c3", "1.1.0", ok(2*time.Hour))},
		want: result{Source: "c3", Tags: []string{"checkout-api 1.1.0"},
			Held: []Held{{Service: "checkout-api", Reason: "newer versions at c4 are not healthy yet (no successful stagehand/devel check run there)"}}},
	}, {
		name:    "a warning promotes where the trigger accepts warning",
		stage:   warnOK,
		history: []Observation{obs("c3", "1.1.0", warned)},
		want:    result{Source: "c3", Tags: []string{"checkout-api 1.1.0"}},
	}, {
		name:    "a warning does not promote where only pass does",
		stage:   passOnly,
		history: []Observation{obs("c3", "1.1.0", warned)},
		want:    result{Held: []Held{{Service: "checkout-api", Reason: "not healthy: no successful stagehand/devel check run on the 1 newest commit(s)"}}},
	}, {
		name:    "a superseded plan's neutral check is no warning",
		stage:   warnOK,
		history: []Observation{obs("c3", "1.1.0", superseded)},
		want:    result{Held: []Held{{Service: "checkout-api", Reason: "not healthy: no successful stagehand/devel check run on the 1 newest commit(s)"}}},
	}, {
		name:    "window closed",
		stage:   windowed,
		history: []Observation{obs("c3", "1.1.0", ok(time.Minute))},
		want: result{Source: "c3", Tags: []string{"checkout-api 1.1.0"},
			Blocked: `promotion window "0 9 * * 1-5" (2h0m0s) is closed; it opens at 2026-11-24T09:00:00Z`},
	}, {
		name:    "target locked",
		stage:   healthy,
		history: []Observation{obs("c3", "1.1.0", ok(time.Minute))},
		locks:   []string{"apps/staging is locked until Mon 23 Nov, 13:00 by an incident."},
		want: result{Source: "c3", Tags: []string{"checkout-api 1.1.0"},
			Blocked: "stage staging is locked: apps/staging is locked until Mon 23 Nov, 13:00 by an incident."},
	}, {
		name:    "target frozen",
		stage:   healthy,
		history: []Observation{obs("c3", "1.1.0", ok(time.Minute))},
		frozen:  "closed: inside the deny window year-end; opens Mon 4 Jan 2027 08:00 Europe/London",
		want: result{Source: "c3", Tags: []string{"checkout-api 1.1.0"},
			Blocked: "stage staging is frozen: its deploy windows are closed: inside the deny window year-end; opens Mon 4 Jan 2027 08:00 Europe/London"},
	}, {
		name:    "nothing differs",
		stage:   healthy,
		history: []Observation{obs("c3", "1.0.0", ok(time.Minute))},
		want:    result{Source: "c3"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Evaluate(Input{Pair: pair, Stage: tt.stage, History: tt.history, Target: target, Locks: tt.locks, Frozen: tt.frozen, Now: now})
			got := result{Blocked: d.Blocked, Source: d.Source, Held: d.Held}
			for _, c := range d.Changes {
				got.Tags = append(got.Tags, c.Service+" "+c.Containers[0].ToTag)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}

	// The evidence names the newest success and the start of the soak.
	d := Evaluate(Input{Pair: pair, Stage: soak, Target: target, Now: now, History: []Observation{
		obs("c4", "1.1.0", ok(time.Minute)), obs("c2", "1.1.0", ok(2*time.Hour)),
	}})
	want := &Evidence{Commit: "c4", Check: *ok(time.Minute), Since: now.Add(-2 * time.Hour)}
	if diff := cmp.Diff(want, d.Changes[0].Health); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
}

func TestCheckResult(t *testing.T) {
	for _, tc := range []struct{ conclusion, title, want string }{
		{"success", "Applied 1 workload", ResultPass},
		{"failure", "Failed: 1 of 1 workload", ResultFail},
		{"neutral", WarningTitle + ": applied 1 workload", ResultWarning},
		{"neutral", "Superseded by abc1234", ""},
		{"cancelled", "Rejected by @alice", ""},
		{"action_required", "Awaiting approval", ""},
	} {
		t.Run(tc.conclusion+" "+tc.title, func(t *testing.T) {
			if got := CheckResult(tc.conclusion, tc.title); got != tc.want {
				t.Errorf("CheckResult(%q, %q) = %q, want %q", tc.conclusion, tc.title, got, tc.want)
			}
		})
	}
}

func TestTitleAndBody(t *testing.T) {
	fsys := stages()
	d := Decision{Pair: Pair{"devel", "staging"}, Source: "0123456789abcdef", Changes: Diff(resolve(t, fsys, "devel"), resolve(t, fsys, "staging")),
		Held: []Held{{Service: "payments-api", Reason: "soaking", Until: time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)}}}
	d.Changes[0].Health = &Evidence{Commit: "0123456789abcdef", Check: Check{URL: "https://github.com/acme/manifests/runs/7", CompletedAt: time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)},
		Since: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	if got, want := Title(d), "Promote devel → staging: checkout-api 1.5.0, ledger 3.0.0, search 0.1.0, edge 1.0.0"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
	body := Body(d, Links{Owner: "acme"})
	for _, want := range []string{
		"<!-- stagehand:promote devel staging -->",
		"### checkout-api\n\nVersion: `1.4.2` → `1.5.0`\n\n| container | from | to | digest | upstream |\n|---|---|---|---|---|\n" +
			"| checkout-api | `1.4.2` | `1.5.0` | `" + digestA + "` | [1.4.2...1.5.0](https://github.com/acme/checkout-api/compare/1.4.2...1.5.0) |\n" +
			"| checkout-worker | — | `1.5.0` | — | — |\n",
		"File: `environments/staging/checkout-api.json` (owner: `checkout-api`)\nHealthy in devel: [stagehand/devel](https://github.com/acme/manifests/runs/7) succeeded on `0123456` at 2026-11-23T11:00:00Z; healthy since 2026-11-23T10:00:00Z.",
		"| ledger | `2.9.0` | `3.0.0` | — | [2.9.0...3.0.0](https://github.com/acme/payments-api/compare/2.9.0...3.0.0) |",
		"### search (new in staging)",
		"| edge | `0.9.2` | `1.0.0` | — | — |", // the root manifest has no owning repository
		"- **payments-api**: soaking (eligible at 2026-11-23T13:00:00Z)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

func TestTitleAndBodyLimits(t *testing.T) {
	d := Decision{Pair: Pair{"devel", "staging"}}
	for i := 0; i < 2000; i++ {
		name := strings.Repeat("s", 40) + string(rune('a'+i%26)) + strings.Repeat("x", i%7)
		d.Changes = append(d.Changes, Change{Service: name, Owner: name, File: "environments/staging/" + name + ".json",
			Containers: []ContainerChange{{DockerName: name, FromTag: "1.0.0", ToTag: "1.0.1", ToDigest: digestA}}})
	}
	title := Title(d)
	if n := len([]rune(title)); n > MaxTitle {
		t.Errorf("title has %d characters, limit %d", n, MaxTitle)
	}
	if !strings.HasSuffix(title, " more") {
		t.Errorf("title %q does not say how many more", title)
	}
	body := Body(d, Links{Owner: "acme"})
	if n := len([]rune(body)); n > MaxBody {
		t.Errorf("body has %d characters, limit %d", n, MaxBody)
	}
	if !strings.Contains(body, "more section(s) not shown") || !strings.HasSuffix(body, "nothing is left to promote._\n") {
		t.Errorf("body does not end with the omission note and footer:\n…%s", body[len(body)-400:])
	}
}
