package authoring

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// newReconciler is the reconciler's command tree as far as these commands
// go: a root of Commands, finished as internal/cli finishes it.
func newReconciler(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "reconciler", SilenceUsage: true, SilenceErrors: true}
	return command.Root(root, stdout, stderr, Commands())
}

// run executes the reconciler with args and returns stdout, stderr and the
// exit code the binary would use.
func runReconciler(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newReconciler(&out, &errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil && err.Error() != "" {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), command.Code(err)
}

// manifestRepo writes files (relative to environments/) into a temporary
// directory and returns it.
func manifestRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, "environments", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const manifestExamples = "../../../examples"

func TestManifestResolveJSON(t *testing.T) {
	stdout, stderr, code := runReconciler(t, "manifest", "resolve", manifestExamples, "--env", "devel", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	want := []string{"environment", "layout", "overrides", "root", "services", "skipConfirmation", "warnings"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(got))); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	var env manifest.Environment
	if err := json.Unmarshal([]byte(stdout), &env); err != nil {
		t.Fatal(err)
	}
	if env.Name != "devel" || !env.SkipConfirmation || len(env.Services) == 0 {
		t.Errorf("got %+v", env)
	}
	s, ok := env.Service("checkout-api")
	if !ok || s.Source != "environments/devel/checkout-api.json" || s.Containers[0].DockerName != "checkout-api" {
		t.Errorf("checkout-api = %+v", s)
	}
	svc := got["services"].([]any)[0].(map[string]any)
	if diff := cmp.Diff([]string{"containers", "name", "source", "version"}, slices.Sorted(maps.Keys(svc))); diff != "" {
		t.Errorf("service keys (-want +got):\n%s", diff)
	}
	ctr := svc["containers"].([]any)[0].(map[string]any)
	if diff := cmp.Diff([]string{"dockerDigest", "dockerName", "dockerTag"}, slices.Sorted(maps.Keys(ctr))); diff != "" {
		t.Errorf("container keys (-want +got):\n%s", diff)
	}
}

// TestManifestResolveJSONOverrides checks the rest of the JSON contract on a
// repository with an override: overrides[service, winner, shadowed], the
// winner standing where it was written, and layout{file, services, includes}.
func TestManifestResolveJSONOverrides(t *testing.T) {
	dir := manifestRepo(t, map[string]string{
		"devel/manifest.json": `{"includes": ["../shared/base.json", "./api.json"]}`,
		"shared/base.json":    `{"services": [{"name": "api", "containers": [{"dockerTag": "1.0.0"}]}, {"name": "db", "containers": [{"dockerTag": "9"}]}]}`,
		"devel/api.json":      `{"services": [{"name": "api", "containers": [{"dockerTag": "1.1.0"}]}]}`,
	})
	stdout, stderr, code := runReconciler(t, "manifest", "resolve", dir, "--env", "devel", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Root     string `json:"root"`
		Services []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		} `json:"services"`
		Overrides []map[string]json.RawMessage `json:"overrides"`
		Layout    map[string]json.RawMessage   `json:"layout"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if got.Root != "environments/devel/manifest.json" {
		t.Errorf("root = %q, want the environment's manifest file", got.Root)
	}
	var order []string
	for _, s := range got.Services {
		order = append(order, s.Name+"@"+s.Source)
	}
	if diff := cmp.Diff([]string{"db@environments/shared/base.json", "api@environments/devel/api.json"}, order); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
	if len(got.Overrides) != 1 {
		t.Fatalf("overrides = %v, want one", got.Overrides)
	}
	if diff := cmp.Diff([]string{"service", "shadowed", "winner"}, slices.Sorted(maps.Keys(got.Overrides[0]))); diff != "" {
		t.Errorf("override keys (-want +got):\n%s", diff)
	}
	var winner manifest.Location
	if err := json.Unmarshal(got.Overrides[0]["winner"], &winner); err != nil {
		t.Fatal(err)
	}
	if want := (manifest.Location{File: "environments/devel/api.json", Line: 1, Column: 15, Pointer: "/services/0"}); winner != want {
		t.Errorf("winner = %+v, want %+v", winner, want)
	}
	for _, k := range []string{"file", "services", "includes"} {
		if _, ok := got.Layout[k]; !ok {
			t.Errorf("layout lacks %q: %s", k, stdout)
		}
	}
	var includes []manifest.Layout
	if err := json.Unmarshal(got.Layout["includes"], &includes); err != nil {
		t.Fatal(err)
	}
	if len(includes) != 2 || includes[0].File != "environments/shared/base.json" || !includes[0].Services[0].Overridden {
		t.Errorf("layout includes = %+v", includes)
	}
}

func TestManifestResolveText(t *testing.T) {
	stdout, stderr, code := runReconciler(t, "manifest", "resolve", manifestExamples, "--env", "prod")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"environment: prod (environments/prod/manifest.json)", "skipConfirmation: false", "checkout-api", "environments/shared/platform.json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

var manifestBadRepo = map[string]string{
	"devel/manifest.json": "{\n  \"includes\": [\"./a.json\"],\n  \"services\": [{\"name\": \"api\", \"containers\": [{\"dockertag\": \"1\"}]}]\n}\n",
	"devel/a.json":        `{"services": [{"name": "x", "version": "1.0"}]}`,
	"prod/manifest.json":  `{}`,
}

func TestManifestResolveErrors(t *testing.T) {
	dir := manifestRepo(t, manifestBadRepo)
	// The root manifest is read first, then its includes.
	wantErrors := []manifest.Error{
		{File: "environments/devel/manifest.json", Line: 3, Column: 48, Pointer: "/services/0/containers/0/dockertag",
			Message: `unknown key "dockertag"; did you mean "dockerTag"?`},
		{File: "environments/devel/a.json", Line: 1, Column: 40, Pointer: "/services/0/version",
			Message: `invalid version "1.0" (need MAJOR.MINOR.PATCH); expected SemVer 2.0 such as "1.4.2" or "2.0.0-rc.1+build.5"`},
	}
	t.Run("text", func(t *testing.T) {
		stdout, stderr, code := runReconciler(t, "manifest", "resolve", dir, "--env", "devel")
		if code != 1 || stdout != "" {
			t.Fatalf("exit %d, stdout %q", code, stdout)
		}
		var want []string
		for _, e := range wantErrors {
			want = append(want, e.Error())
		}
		if diff := cmp.Diff(strings.Join(want, "\n")+"\n", stderr); diff != "" {
			t.Errorf("stderr (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(stderr, "environments/devel/manifest.json:3:48: /services/0/containers/0/dockertag: unknown key") {
			t.Errorf("line format is not file:line:col: pointer: message: %q", stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		stdout, _, code := runReconciler(t, "manifest", "resolve", dir, "--env", "devel", "-o", "json")
		if code != 1 {
			t.Fatalf("exit %d", code)
		}
		var got struct {
			Errors []manifest.Error `json:"errors"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if diff := cmp.Diff(wantErrors, got.Errors); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})
	t.Run("unknown keys allowed", func(t *testing.T) {
		dir := manifestRepo(t, map[string]string{"devel/manifest.json": `{"services": [{"name": "api", "owner": "me"}]}`})
		stdout, stderr, code := runReconciler(t, "manifest", "resolve", dir, "--env", "devel", "--allow-unknown-keys")
		if code != 0 || !strings.Contains(stdout, "api") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr, `warning: environments/devel/manifest.json:1:31: /services/0/owner: unknown key "owner"`) {
			t.Errorf("stderr = %q", stderr)
		}
	})
	t.Run("unknown environment", func(t *testing.T) {
		_, stderr, code := runReconciler(t, "manifest", "resolve", dir, "--env", "qa")
		if code != 1 || !strings.Contains(stderr, "environments/qa/manifest.json: reading the environment's manifest: file does not exist") {
			t.Errorf("exit %d: %q", code, stderr)
		}
	})
}

func TestManifestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"manifest", "resolve", manifestExamples},
		{"manifest", "resolve", "--env", "devel"},
		{"manifest", "resolve", manifestExamples, "--env", "devel", "-o", "yaml"},
		{"manifest", "resolve", manifestExamples, "--env", "../devel"},
		{"manifest", "resolve", "/does/not/exist", "--env", "devel"},
		{"manifest", "resolve", manifestExamples, "extra", "--env", "devel"},
		{"manifest", "resolve", manifestExamples, "--env", "devel", "--bogus"},
		{"manifest", "validate"},
		{"manifest", "validate", manifestExamples, "-o", "xml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if _, stderr, code := runReconciler(t, args...); code != 2 {
				t.Errorf("exit %d, want 2 (%s)", code, stderr)
			}
		})
	}
}

func TestManifestValidate(t *testing.T) {
	t.Run("examples are valid", func(t *testing.T) {
		stdout, stderr, code := runReconciler(t, "manifest", "validate", manifestExamples)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, env := range []string{"devel", "prod", "staging"} {
			if !strings.Contains(stdout, "ok       "+env) {
				t.Errorf("no ok line for %s:\n%s", env, stdout)
			}
		}
	})
	t.Run("one invalid environment fails the run", func(t *testing.T) {
		dir := manifestRepo(t, manifestBadRepo)
		stdout, stderr, code := runReconciler(t, "manifest", "validate", dir)
		if code != 1 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(stdout, "invalid  devel (2 problems)") || !strings.Contains(stdout, "ok       prod") {
			t.Errorf("stdout:\n%s", stdout)
		}
		if !strings.Contains(stderr, "environments/devel/a.json:1:40: /services/0/version") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		dir := manifestRepo(t, manifestBadRepo)
		stdout, _, code := runReconciler(t, "manifest", "validate", dir, "-o", "json")
		if code != 1 {
			t.Fatalf("exit %d", code)
		}
		var got struct {
			Valid        bool
			Environments []struct {
				Environment string
				Valid       bool
				Errors      []manifest.Error
			}
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.Valid || len(got.Environments) != 2 || got.Environments[0].Valid || len(got.Environments[0].Errors) != 2 || !got.Environments[1].Valid {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("no environments", func(t *testing.T) {
		dir := t.TempDir()
		_, stderr, code := runReconciler(t, "manifest", "validate", dir)
		if code != 1 || !strings.Contains(stderr, dir+" has no environments/ directory") {
			t.Errorf("exit %d, want 1: %q", code, stderr)
		}
		if err := os.Mkdir(filepath.Join(dir, "environments"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, stderr, code = runReconciler(t, "manifest", "validate", dir)
		if code != 1 || !strings.Contains(stderr, "no environments found") {
			t.Errorf("empty environments/: exit %d, want 1: %q", code, stderr)
		}
	})
}
