package manifest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// repo builds an in-memory repository; keys are relative to environments/.
func repo(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys["environments/"+k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fsys
}

func errorList(t *testing.T, err error) *ErrorList {
	t.Helper()
	var l *ErrorList
	if !errors.As(err, &l) {
		t.Fatalf("got error %v (%T), want an *ErrorList", err, err)
	}
	return l
}

func TestBadInput(t *testing.T) {
	cases := badCases()
	if len(cases) < 30 {
		t.Fatalf("only %d bad-input cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, err := Resolve(t.Context(), Repo{FS: repo(tc.files), Root: "."}, "e", tc.opts...)
			if env != nil {
				t.Errorf("got an environment for invalid input: %+v", env)
			}
			l := errorList(t, err)
			if len(tc.want) == 0 {
				t.Fatal("case has no expected errors")
			}
			if diff := cmp.Diff(tc.want, l.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// names returns "name@source" for each service, the shape most rule tests
// compare.
func names(e *Environment) []string {
	var out []string
	for _, s := range e.Services {
		out = append(out, s.Name+"@"+strings.TrimPrefix(s.Source, "environments/"))
	}
	return out
}

func svcJSON(name, tag string) string {
	return fmt.Sprintf(`{"name": %q, "containers": [{"dockerTag": %q}]}`, name, tag)
}

func TestResolveRules(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		opts      []Option
		want      []string
		skip      bool
		overrides int
		warnings  []string
	}{
		{
			name: "included services come first, in include order",
			files: map[string]string{
				"e/manifest.json": `{"includes": ["./a.json", "./b.json"], "services": [` + svcJSON("r", "1") + `]}`,
				"e/a.json":        `{"services": [` + svcJSON("a", "1") + `]}`,
				"e/b.json":        `{"services": [` + svcJSON("b", "1") + `]}`,
			},
			want: []string{"a@e/a.json", "b@e/b.json", "r@e/manifest.json"},
		},
		{
			name: "includes are recursive and relative to the including file",
			files: map[string]string{
				"e/manifest.json":  `{"includes": ["../shared/base.json", "./b.json"]}`,
				"shared/base.json": `{"includes": ["./more.json"], "services": [` + svcJSON("base", "1") + `]}`,
				"shared/more.json": `{"services": [` + svcJSON("more", "1") + `]}`,
				"e/b.json":         `{"services": [` + svcJSON("b", "1") + `]}`,
			},
			want: []string{"more@shared/more.json", "base@shared/base.json", "b@e/b.json"},
		},
		{
			name: "the later entry wins and stands where it was written",
			files: map[string]string{
				"e/manifest.json": `{"includes": ["./a.json"], "services": [` + svcJSON("r", "1") + `, ` + svcJSON("x", "2") + `]}`,
				"e/a.json":        `{"services": [` + svcJSON("x", "1") + `, ` + svcJSON("y", "1") + `]}`,
			},
			want:      []string{"y@e/a.json", "r@e/manifest.json", "x@e/manifest.json"},
			overrides: 1,
		},
		{
			name: "a later include overrides an earlier one",
			files: map[string]string{
				"e/manifest.json": `{"includes": ["./a.json", "./b.json"]}`,
				"e/a.json":        `{"services": [` + svcJSON("x", "1") + `]}`,
				"e/b.json":        `{"services": [` + svcJSON("x", "2") + `]}`,
			},
			want:      []string{"x@e/b.json"},
			overrides: 1,
		},
		{
			name: "three entries: both earlier ones are shadowed by the last",
			files: map[string]string{
				"e/manifest.json": `{"includes": ["./a.json", "./b.json"], "services": [` + svcJSON("x", "3") + `]}`,
				"e/a.json":        `{"services": [` + svcJSON("x", "1") + `]}`,
				"e/b.json":        `{"services": [` + svcJSON("x", "2") + `]}`,
			},
			want:      []string{"x@e/manifest.json"},
			overrides: 2,
		},
		{
			name: "a diamond is fine and reports no override",
			files: map[string]string{
				"e/manifest.json": `{"includes": ["./a.json", "./b.json"]}`,
				"e/a.json":        `{"includes": ["./c.json"], "services": [` + svcJSON("a", "1") + `]}`,
				"e/b.json":        `{"includes": ["./c.json"], "services": [` + svcJSON("b", "1") + `]}`,
				"e/c.json":        `{"services": [` + svcJSON("c", "1") + `]}`,
			},
			want: []string{"a@e/a.json", "c@e/c.json", "b@e/b.json"},
		},
		{
			name:  "skipConfirmation in the root manifest counts",
			files: map[string]string{"e/manifest.json": `{"skipConfirmation": true}`},
			skip:  true,
		},
		{
			name: "skipConfirmation in an included file is ignored with a warning",
			files: map[string]string{
				"e/manifest.json": `{"includes": ["./a.json"]}`,
				"e/a.json":        `{"skipConfirmation": true}`,
			},
			warnings: []string{"environments/e/a.json:1:22: /skipConfirmation: skipConfirmation is ignored in an included file; only the environment's manifest.json decides"},
		},
		{
			name: "unknown keys become warnings when allowed",
			files: map[string]string{
				"e/manifest.json": `{"services": [{"name": "api", "replicas": 3, "containers": [{"dockerTag": "1"}]}], "owner": "team-a"}`,
			},
			opts: []Option{AllowUnknownKeys()},
			want: []string{"api@e/manifest.json"},
			warnings: []string{
				`environments/e/manifest.json:1:31: /services/0/replicas: unknown key "replicas"; accepted keys: name, version, containers`,
				`environments/e/manifest.json:1:84: /owner: unknown key "owner"; accepted keys: includes, services, skipConfirmation`,
			},
		},
		{
			name:  "an empty manifest is valid",
			files: map[string]string{"e/manifest.json": "{}\n"},
		},
		{
			name:  "escapes in strings are decoded",
			files: map[string]string{"e/manifest.json": `{"services": [{"name": "\u0061p\u0069", "containers": [{"dockerTag": "1\u002e0"}]}]}`},
			want:  []string{"api@e/manifest.json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Resolve(t.Context(), Repo{FS: repo(tt.files), Root: "."}, "e", tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(env)); diff != "" {
				t.Errorf("services (-want +got):\n%s", diff)
			}
			if env.SkipConfirmation != tt.skip {
				t.Errorf("SkipConfirmation = %v, want %v", env.SkipConfirmation, tt.skip)
			}
			if len(env.Overrides) != tt.overrides {
				t.Errorf("overrides = %+v, want %d", env.Overrides, tt.overrides)
			}
			var warnings []string
			for _, w := range env.Warnings {
				warnings = append(warnings, w.Error())
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverridePositions(t *testing.T) {
	env, err := Resolve(t.Context(), Repo{FS: repo(map[string]string{
		"e/manifest.json": "{\n  \"includes\": [\"./a.json\"],\n  \"services\": [\n    " + svcJSON("x", "2") + "\n  ]\n}\n",
		"e/a.json":        "{\"services\": [" + svcJSON("y", "1") + ", " + svcJSON("x", "1") + "]}",
	}), Root: "."}, "e")
	if err != nil {
		t.Fatal(err)
	}
	want := []Override{{
		Service:  "x",
		Winner:   Location{File: "environments/e/manifest.json", Line: 4, Column: 5, Pointer: "/services/0"},
		Shadowed: Location{File: "environments/e/a.json", Line: 1, Column: 66, Pointer: "/services/1"},
	}}
	if diff := cmp.Diff(want, env.Overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
	x, ok := env.Service("x")
	if !ok || x.Containers[0].DockerTag != "2" || x.Containers[0].DockerName != "x" {
		t.Errorf("winner = %+v, want tag 2 with dockerName defaulted to x", x)
	}
}

func TestLayout(t *testing.T) {
	env, err := Resolve(t.Context(), Repo{FS: repo(map[string]string{
		"e/manifest.json":           `{"includes": ["./checkout-api.json", "../shared/platform.json"], "services": [` + svcJSON("checkout-api", "9") + `]}`,
		"e/checkout-api.json":       `{"services": [` + svcJSON("checkout-api", "1") + `, ` + svcJSON("checkout-worker", "1") + `]}`,
		"shared/platform.json":      `{"includes": ["./observability.json"]}`,
		"shared/observability.json": `{"services": [` + svcJSON("otel-collector", "0.9.0") + `]}`,
	}), Root: "."}, "e")
	if err != nil {
		t.Fatal(err)
	}
	want := &Layout{
		File: "environments/e/manifest.json", Owner: "manifest",
		Services: []LayoutService{{Name: "checkout-api", Line: 1, Column: 79, Pointer: "/services/0"}},
		Includes: []*Layout{
			{
				File: "environments/e/checkout-api.json", Owner: "checkout-api",
				Services: []LayoutService{
					{Name: "checkout-api", Line: 1, Column: 15, Pointer: "/services/0", Overridden: true, OverriddenBy: "environments/e/manifest.json"},
					{Name: "checkout-worker", Line: 1, Column: 77, Pointer: "/services/1"},
				},
				Includes: []*Layout{},
			},
			{
				File: "environments/shared/platform.json", Owner: "platform", Services: []LayoutService{},
				Includes: []*Layout{{
					File: "environments/shared/observability.json", Owner: "observability",
					Services: []LayoutService{{Name: "otel-collector", Line: 1, Column: 15, Pointer: "/services/0"}},
					Includes: []*Layout{},
				}},
			},
		},
	}
	if diff := cmp.Diff(want, env.Layout); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
	var files []string
	env.Layout.Walk(func(l *Layout) { files = append(files, l.Owner) })
	if diff := cmp.Diff([]string{"manifest", "checkout-api", "platform", "observability"}, files); diff != "" {
		t.Errorf("Walk (-want +got):\n%s", diff)
	}
}

func TestOwner(t *testing.T) {
	for in, want := range map[string]string{
		"environments/devel/ebury-api-events.json": "ebury-api-events",
		"environments/devel/manifest.json":         "manifest",
		"checkout-api.json":                        "checkout-api",
		"environments/devel/notes":                 "notes",
	} {
		if got := Owner(in); got != want {
			t.Errorf("Owner(%q) = %q, want %q", in, got, want)
		}
	}
}

// The RFC's own example, verbatim, with the two files it includes.
const rfcExample = `{
"includes": [
"./other.json",
"./files.json"
],
"services": [
{
"name": "events-logger",
"version": "0.1.0",
"containers": [
{
"dockerTag": "e96ae0a",
"dockerDigest": "sha256:f48a20f48cbc2b965e37ff9144048c644890cb37cefa85fafc8fae7f89b15455"
}
]
},
{
"name": "events-beat",
"version": "0.1.0",
"containers": [
{
"dockerTag": "e96ae0a",
"dockerDigest": "sha256:499442b8120888f3dddefe40f8a771ac252b2fd03b5efa122f61dd5bbfb32352"
}
]
}
]
}`

func TestRFCExample(t *testing.T) {
	env, err := Resolve(t.Context(), Repo{FS: repo(map[string]string{
		"devel/manifest.json": rfcExample,
		"devel/other.json":    `{"services": [{"name": "other", "containers": [{"dockerTag": "1.0.0"}]}]}`,
		"devel/files.json":    `{"services": []}`,
	}), Root: "."}, "devel")
	if err != nil {
		t.Fatal(err)
	}
	want := []Service{
		{Name: "other", Source: "environments/devel/other.json", Containers: []Container{{DockerName: "other", DockerTag: "1.0.0"}}},
		{Name: "events-logger", Version: "0.1.0", Source: "environments/devel/manifest.json", Containers: []Container{
			{DockerName: "events-logger", DockerTag: "e96ae0a", DockerDigest: "sha256:f48a20f48cbc2b965e37ff9144048c644890cb37cefa85fafc8fae7f89b15455"}}},
		{Name: "events-beat", Version: "0.1.0", Source: "environments/devel/manifest.json", Containers: []Container{
			{DockerName: "events-beat", DockerTag: "e96ae0a", DockerDigest: "sha256:499442b8120888f3dddefe40f8a771ac252b2fd03b5efa122f61dd5bbfb32352"}}},
	}
	if diff := cmp.Diff(want, env.Services); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
	if env.SkipConfirmation || env.Name != "devel" || env.Root != "environments/devel/manifest.json" {
		t.Errorf("got %q %q skip=%v", env.Name, env.Root, env.SkipConfirmation)
	}
}

func TestEnvironments(t *testing.T) {
	fsys := fstest.MapFS{
		"repo/environments/prod/manifest.json":   {Data: []byte(`{}`)},
		"repo/environments/devel/manifest.json":  {Data: []byte(`{}`)},
		"repo/environments/devel/checkout.json":  {Data: []byte(`{}`)},
		"repo/environments/shared/platform.json": {Data: []byte(`{}`)},
		"repo/environments/README.md":            {Data: []byte(`hi`)},
		"repo/environments/odd/manifest.json/x":  {Data: []byte(`{}`)},
	}
	got, err := Environments(fsys, "repo")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"devel", "prod"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Environments(fsys, "nope"); err == nil {
		t.Error("no error for a root without environments/")
	}
	if _, err := Environments(fsys, "../x"); err == nil {
		t.Error("no error for a root outside the repository")
	}
	// Resolve takes the same root.
	if _, err := Resolve(t.Context(), Repo{FS: fsys, Root: "repo"}, "devel"); err != nil {
		t.Errorf("Resolve under a root: %v", err)
	}
}

func TestResolveArguments(t *testing.T) {
	fsys := repo(map[string]string{"e/manifest.json": `{}`})
	for _, tc := range []struct {
		root, env string
		opts      []Option
	}{
		{".", "", nil},
		{".", "..", nil},
		{".", "e/../e", nil},
		{"/abs", "e", nil},
		{".", "e", []Option{MaxDepth(-1)}},
		{".", "e", []Option{MaxFiles(0)}},
		{".", "e", []Option{MaxFileSize(0)}},
		{".", "e", []Option{MaxErrors(0)}},
		{".", "e", []Option{MaxIncludes(0)}},
		{".", "e", []Option{MaxServices(0)}},
		{".", "e", []Option{MaxBytes(0)}},
	} {
		_, err := Resolve(t.Context(), Repo{FS: fsys, Root: tc.root}, tc.env, tc.opts...)
		var l *ErrorList
		if err == nil || errors.As(err, &l) {
			t.Errorf("Resolve(%q, %q) = %v, want a plain error", tc.root, tc.env, err)
		}
	}
}

func TestResolveStopsWithContext(t *testing.T) {
	fsys := repo(map[string]string{"e/manifest.json": `{"services": [` + okSvc + `]}`})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Resolve(ctx, Repo{FS: fsys, Root: "."}, "e")
	var l *ErrorList
	if !errors.Is(err, context.Canceled) || errors.As(err, &l) {
		t.Fatalf("Resolve with an ended context = %v, want a plain error wrapping context.Canceled", err)
	}
	if want := `resolving environment "e": stopped after reading 0 files: context canceled`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestErrorCap(t *testing.T) {
	var svcs []string
	for i := range 60 {
		svcs = append(svcs, fmt.Sprintf(`{"name": "s%d", "containers": [{"dockerTag": "-bad"}]}`, i))
	}
	fsys := repo(map[string]string{"e/manifest.json": `{"services": [` + strings.Join(svcs, ",\n") + `]}`})
	l := errorList(t, func() error { _, err := Resolve(t.Context(), Repo{FS: fsys, Root: "."}, "e"); return err }())
	if len(l.Errors) != 50 || l.Omitted != 10 || l.Len() != 60 {
		t.Errorf("got %d errors, %d omitted; want 50 and 10", len(l.Errors), l.Omitted)
	}
	if !strings.HasSuffix(l.Error(), "... and 10 more problems") {
		t.Errorf("Error() does not mention the omitted problems")
	}
	if l.Errors[49].Line != 50 {
		t.Errorf("50th error on line %d, want 50 (errors in file order)", l.Errors[49].Line)
	}
	l = errorList(t, func() error { _, err := Resolve(t.Context(), Repo{FS: fsys, Root: "."}, "e", MaxErrors(5)); return err }())
	if len(l.Errors) != 5 || l.Omitted != 55 {
		t.Errorf("MaxErrors(5): got %d errors, %d omitted", len(l.Errors), l.Omitted)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.json", Line: 3, Column: 7, Pointer: "/services/0/name", Message: "bad"}, "a.json:3:7: /services/0/name: bad"},
		{Error{File: "a.json", Line: 1, Column: 1, Message: "syntax error: x"}, "a.json:1:1: syntax error: x"},
		{Error{File: "a.json", Message: "file does not exist"}, "a.json: file does not exist"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if got := pointerOf([]seg{{key: "a/b~c", idx: -1}, {idx: 3}}); got != "/a~1b~0c/3" {
		t.Errorf("pointer escaping: got %q", got)
	}
}
