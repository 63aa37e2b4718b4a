package promote

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	in := `stages:
  - name: devel
    lockPath: apps/devel
  - name: staging
    promoteFrom: devel
    autoMerge: true
    lockPath: apps/staging
    requires:
      soak: 30m
  - name: prod
    promoteFrom: staging
    requires:
      healthy: true
      soak: 24h
    window:
      schedule: "0 9 * * 1-5"
      duration: 8h
`
	got, err := Parse("pipeline.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Pipeline{File: "pipeline.yaml", Stages: []Stage{
		{Name: "devel", LockPath: "apps/devel", Requires: Requires{Healthy: true}, Line: 2},
		{Name: "staging", PromoteFrom: "devel", AutoMerge: true, LockPath: "apps/staging", Requires: Requires{Healthy: true, Soak: 30 * time.Minute}, Line: 4},
		{Name: "prod", PromoteFrom: "staging", Requires: Requires{Healthy: true, Soak: 24 * time.Hour}, Window: &Window{Schedule: "0 9 * * 1-5", Duration: 8 * time.Hour}, Line: 10},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Window{})); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Pair{{"devel", "staging"}, {"staging", "prod"}}, got.Pairs()); diff != "" {
		t.Errorf("Pairs (-want +got):\n%s", diff)
	}
	if _, err := got.Pair("devel", "prod"); !errors.Is(err, ErrNoPair) {
		t.Errorf("Pair(devel, prod) = %v, want ErrNoPair", err)
	}
	if _, err := got.Pair("devel", "qa"); !errors.Is(err, ErrNoStage) {
		t.Errorf("Pair(devel, qa) = %v, want ErrNoStage", err)
	}
	if p, err := got.Pair("staging", "prod"); err != nil || p.Branch() != "stagehand/promote-staging-prod" {
		t.Errorf("Pair(staging, prod) = %v, %v; want branch stagehand/promote-staging-prod", p, err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{{
		name: "syntax",
		in:   "stages: x\n name: d:\n",
		want: []string{"p.yaml:2:1: mapping values are not allowed in this context"},
	}, {
		name: "not a mapping",
		in:   "- devel\n",
		want: []string{"p.yaml:1:1: want a mapping, got a list"},
	}, {
		name: "unknown keys suggest the closest",
		in:   "stages:\n  - name: devel\n  - name: prod\n    promotefrom: devel\n    requires: {heathy: true}\n",
		want: []string{
			`p.yaml:4:5: stages[1].promotefrom: unknown key "promotefrom"; did you mean promoteFrom?`,
			`p.yaml:5:16: stages[1].requires.heathy: unknown key "heathy"; did you mean healthy?`,
			`p.yaml:3:5: stages[1]: requires, window and autoMerge need promoteFrom`,
		},
	}, {
		name: "types and values",
		in: `stages:
  - name: Devel
  - name: staging
    promoteFrom: prod
    autoMerge: "yes"
    lockPath: Apps/Staging
    requires: {soak: 3x}
  - name: staging
    promoteFrom: staging
    window: {schedule: "61 * * * *", duration: 0s}
`,
		want: []string{
			`p.yaml:2:11: stages[0].name: "Devel": want lowercase letters, digits and '-' (an environment directory name)`,
			`p.yaml:5:16: stages[1].autoMerge: want true or false, got string "yes"`,
			`p.yaml:6:15: stages[1].lockPath: "Apps/Staging": want a lock path of lowercase letters, digits, '-' and '/'`,
			`p.yaml:7:22: stages[1].requires.soak: "3x": not a duration; want e.g. 30m, 2h30m or 24h`,
			`p.yaml:3:5: stages[1].promoteFrom: "prod" is not an earlier stage; want one of "Devel"`,
			`p.yaml:10:24: stages[2].window.schedule: "61 * * * *": end of range (61) above maximum (59): 61; want a cron expression like "0 9 * * 1-5" (optionally prefixed CRON_TZ=Zone)`,
			`p.yaml:10:48: stages[2].window.duration: "0s": want a positive duration`,
			`p.yaml:8:5: stages[2].name: duplicate stage "staging" (also stages[1], line 3)`,
			`p.yaml:8:5: stages[2].promoteFrom: stage "staging" cannot promote from itself`,
		},
	}, {
		name: "soak without healthy, missing keys, duplicates",
		in: `stages:
  - name: a
  - promoteFrom: a
  - name: c
    name: d
    promoteFrom: a
    requires: {healthy: false, soak: 1h}
    window: {}
`,
		want: []string{
			`p.yaml:3:5: stages[1]: missing key name`,
			`p.yaml:5:5: stages[2].name: duplicate key "name" (first at line 4)`,
			`p.yaml:7:38: stages[2].requires.soak: soak counts from the earlier stage's successful check; it needs healthy: true`,
			`p.yaml:8:13: stages[2].window: missing key schedule`,
			`p.yaml:8:13: stages[2].window: missing key duration`,
		},
	}, {
		name: "empty",
		in:   "",
		want: []string{"p.yaml: empty file; want a mapping with a stages list"},
	}, {
		name: "no stages",
		in:   "stages: []\n",
		want: []string{"p.yaml:1:9: stages: want at least one stage"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.in))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse error = %v, want an ErrorList", err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`stages:
  - name: a
  - name: b
    promoteFrom: a
    window: {schedule: "CRON_TZ=UTC 0 9 * * 1-5", duration: 8h}
`))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Stages[1].Window
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	// 2026-11-23 is a Monday.
	tests := []struct {
		now          string
		open         bool
		opens, close string
	}{
		{now: "2026-11-23T08:59:59Z", open: false, opens: "2026-11-23T09:00:00Z"},
		{now: "2026-11-23T09:00:00Z", open: true, opens: "2026-11-24T09:00:00Z", close: "2026-11-23T17:00:00Z"},
		{now: "2026-11-23T16:59:59Z", open: true, opens: "2026-11-24T09:00:00Z", close: "2026-11-23T17:00:00Z"},
		{now: "2026-11-23T17:00:00Z", open: false, opens: "2026-11-24T09:00:00Z"},
		{now: "2026-11-21T12:00:00Z", open: false, opens: "2026-11-23T09:00:00Z"}, // Saturday
	}
	for _, tt := range tests {
		t.Run(tt.now, func(t *testing.T) {
			now := at(tt.now)
			if got := w.Open(now); got != tt.open {
				t.Errorf("Open = %v, want %v", got, tt.open)
			}
			if got := w.Opens(now); !got.Equal(at(tt.opens)) {
				t.Errorf("Opens = %v, want %v", got, tt.opens)
			}
			var wantClose time.Time
			if tt.close != "" {
				wantClose = at(tt.close)
			}
			if got := w.Closes(now); !got.Equal(wantClose) {
				t.Errorf("Closes = %v, want %v", got, wantClose)
			}
		})
	}
	never, err := Parse("p.yaml", []byte("stages: [{name: a}, {name: b, promoteFrom: a, window: {schedule: '0 9 30 2 *', duration: 8h}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if never.Stages[1].Window.Open(at("2026-11-23T10:00:00Z")) {
		t.Error("a window whose schedule never fires (30 February) is open")
	}
	var none *Window
	if !none.Open(at("2026-11-21T12:00:00Z")) {
		t.Error("a stage without window must always be open")
	}
}

func TestLoadExample(t *testing.T) {
	p, err := Load(os.DirFS("../../examples"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Pair{{"devel", "staging"}, {"staging", "prod"}}, p.Pairs()); diff != "" {
		t.Errorf("example pairs (-want +got):\n%s", diff)
	}
	if p.File != "environments/pipeline.yaml" {
		t.Errorf("File = %q", p.File)
	}
	if _, err := Load(os.DirFS(t.TempDir()), "."); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of an empty directory = %v, want fs.ErrNotExist", err)
	}
}

func TestParseRejectsEveryWindows(t *testing.T) {
	_, err := Parse("p.yaml", []byte("stages: [{name: a}, {name: b, promoteFrom: a, window: {schedule: '@every 1h', duration: 1h}}]\n"))
	if err == nil || !strings.Contains(err.Error(), "not @every") {
		t.Errorf("Parse = %v, want @every refused", err)
	}
}

// FuzzParse: any input either parses into a pipeline whose promotions name
// earlier stages, or fails with positioned errors naming the file; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    requires: {soak: 30m}\n",
		"stages: [{name: a}, {name: b, promoteFrom: a, window: {schedule: '0 9 * * 1-5', duration: 2h}}]",
		"stages: [{name: a, promoteFrom: a}]", "- x", "", "stages: {a: 1}", "stages: [&x {name: a}, *x]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse("p.yaml", []byte(in))
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %v is not a non-empty ErrorList", err)
			}
			for _, e := range list {
				if e.File != "p.yaml" {
					t.Fatalf("error %v does not name the file", e)
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range p.Stages {
			if s.PromoteFrom != "" && !seen[s.PromoteFrom] {
				t.Fatalf("stage %q promotes from %q, not an earlier stage", s.Name, s.PromoteFrom)
			}
			if s.Window != nil {
				s.Window.Open(time.Now()) // must not panic
			}
			seen[s.Name] = true
		}
	})
}

func TestParseBumps(t *testing.T) {
	in := `stages:
  - name: devel
    acceptsBumps: true
    bumpClaims:
      ref: refs/heads/main
      workflowRef: [acme/checkout-api/.github/workflows/release.yml@, "gitlab.com/acme/"]
      event: [push, workflow_dispatch]
  - name: staging
    promoteFrom: devel
owners:
  checkout-api.json: [acme/checkout-api, acme/checkout-worker]
  shared.json:
    repositories: [platform/tools/builder]
    allowNewServices: true
`
	got, err := Parse("pipeline.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Pipeline{File: "pipeline.yaml", Stages: []Stage{
		{Name: "devel", Requires: Requires{Healthy: true}, AcceptsBumps: true, Line: 2, BumpClaims: BumpClaims{
			Ref:         []string{"refs/heads/main"},
			WorkflowRef: []string{"acme/checkout-api/.github/workflows/release.yml@", "gitlab.com/acme/"},
			Event:       []string{"push", "workflow_dispatch"},
		}},
		{Name: "staging", PromoteFrom: "devel", Requires: Requires{Healthy: true}, Line: 8},
	}, Owners: map[string]FileOwners{
		"checkout-api.json": {Repositories: []string{"acme/checkout-api", "acme/checkout-worker"}},
		"shared.json":       {Repositories: []string{"platform/tools/builder"}, AllowNewServices: true},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Window{})); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if o, ok := got.OwnersOf("shared.json"); !ok || !o.AllowNewServices {
		t.Errorf("OwnersOf(shared.json) = %+v, %v; want listed, allowNewServices", o, ok)
	}
	if _, ok := got.OwnersOf("payments.json"); ok {
		t.Error("OwnersOf(payments.json) is listed; want the convention to apply")
	}
}

func TestParseBumpErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{{
		name: "claims without acceptsBumps, bad values",
		in: `stages:
  - name: devel
    acceptsBumps: "yes"
    bumpClaims: {ref: [refs/heads/main, 3], events: push}
owners:
  checkout-api: [acme/checkout-api]
  a.json: acme
  b.json: []
  c.json: {allowNewServices: maybe}
  d.json: [acme/d]
  d.json: [acme/e]
`,
		want: []string{
			`p.yaml:3:19: stages[0].acceptsBumps: want true or false, got string "yes"`,
			`p.yaml:4:45: stages[0].bumpClaims.events: unknown key "events"; did you mean event?`,
			`p.yaml:4:41: stages[0].bumpClaims.ref: want a string, got number 3`,
			`p.yaml:4:17: stages[0].bumpClaims: bumpClaims restrict bumps, but the stage has no acceptsBumps: true`,
			`p.yaml:6:3: owners.checkout-api: "checkout-api": want a file base name ending in .json, e.g. checkout-api.json`,
			`p.yaml:7:11: owners.a.json: want a list of repositories or a mapping with repositories, got string "acme"`,
			`p.yaml:8:11: owners.b.json: want at least one repository`,
			`p.yaml:9:11: owners.c.json: missing key repositories`,
			`p.yaml:9:30: owners.c.json.allowNewServices: want true or false, got string "maybe"`,
			`p.yaml:11:3: owners.d.json: duplicate file "d.json"`,
		},
	}, {
		name: "repository paths",
		in:   "stages:\n  - name: devel\nowners:\n  x.json: [checkout-api, acme/ok, \"acme/bad name\"]\n",
		want: []string{
			`p.yaml:4:12: owners.x.json: "checkout-api": want a repository path such as acme/checkout-api (GitLab: group/subgroup/project)`,
			`p.yaml:4:35: owners.x.json: "acme/bad name": want a repository path such as acme/checkout-api (GitLab: group/subgroup/project)`,
		},
	}, {
		name: "paths in owned file names and repositories",
		in:   "stages:\n  - name: devel\nowners:\n  ../prod/x.json: [acme/x]\n  sub/y.json: [acme/y]\n  .z.json: [acme/z]\n  w.json: [acme/../payments-api, group/./w]\n",
		want: []string{
			`p.yaml:4:3: owners.../prod/x.json: "../prod/x.json": want a file base name ending in .json, e.g. checkout-api.json`,
			`p.yaml:5:3: owners.sub/y.json: "sub/y.json": want a file base name ending in .json, e.g. checkout-api.json`,
			`p.yaml:6:3: owners..z.json: ".z.json": want a file base name ending in .json, e.g. checkout-api.json`,
			`p.yaml:7:12: owners.w.json: "acme/../payments-api": want a repository path such as acme/checkout-api (GitLab: group/subgroup/project)`,
			`p.yaml:7:34: owners.w.json: "group/./w": want a repository path such as acme/checkout-api (GitLab: group/subgroup/project)`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.in))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse error = %v, want an ErrorList", err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
