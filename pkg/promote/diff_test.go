package promote

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// stages is a repository with services spread over several files: devel has
// one file per upstream repository, staging has some of them and writes the
// rest in its root manifest.
func stages() fstest.MapFS {
	return fstest.MapFS{
		"environments/shared/platform.json": file(`{"services": [{"name": "edge", "containers": [{"dockerTag": "0.9.2"}]}]}`),
		"environments/devel/manifest.json":  file(`{"includes": ["../shared/platform.json", "checkout-api.json", "payments-api.json", "search.json"], "services": [{"name": "edge", "containers": [{"dockerTag": "1.0.0"}]}]}`),
		"environments/devel/checkout-api.json": file(`{"services": [{"name": "checkout-api", "version": "1.5.0", "containers": [
			{"dockerTag": "1.5.0", "dockerDigest": "` + digestA + `"},
			{"dockerName": "checkout-worker", "dockerTag": "1.5.0"}]}]}`),
		"environments/devel/payments-api.json": file(`{"services": [
			{"name": "payments-api", "containers": [{"dockerTag": "2.4.0"}]},
			{"name": "ledger", "containers": [{"dockerTag": "3.0.0"}]}]}`),
		"environments/devel/search.json":     file(`{"services": [{"name": "search", "containers": [{"dockerTag": "0.1.0"}]}]}`),
		"environments/staging/manifest.json": file(`{"includes": ["../shared/platform.json", "checkout-api.json", "payments-api.json"], "services": [{"name": "ledger", "containers": [{"dockerTag": "2.9.0"}]}, {"name": "legacy", "containers": [{"dockerTag": "1"}]}]}`),
		"environments/staging/checkout-api.json": file(`{"services": [{"name": "checkout-api", "version": "1.4.2", "containers": [
			{"dockerTag": "1.4.2", "dockerDigest": "` + digestB + `"}]}]}`),
		"environments/staging/payments-api.json": file(`{"services": [{"name": "payments-api", "containers": [{"dockerTag": "2.4.0", "dockerDigest": "` + digestB + `"}]}]}`),
	}
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s + "\n")} }

func resolve(t *testing.T, fsys fstest.MapFS, env string) *manifest.Environment {
	t.Helper()
	e, err := manifest.Resolve(t.Context(), manifest.Repo{FS: fsys, Root: "."}, env)
	if err != nil {
		t.Fatalf("resolving %s: %v", env, err)
	}
	return e
}

func TestDiff(t *testing.T) {
	fsys := stages()
	got := Diff(resolve(t, fsys, "devel"), resolve(t, fsys, "staging"))
	want := []Change{{
		Service: "checkout-api", FromVersion: "1.4.2", ToVersion: "1.5.0",
		Containers: []ContainerChange{
			{DockerName: "checkout-api", FromTag: "1.4.2", ToTag: "1.5.0", FromDigest: digestB, ToDigest: digestA},
			{DockerName: "checkout-worker", New: true, ToTag: "1.5.0"},
		},
		SourceFile: "environments/devel/checkout-api.json", File: "environments/staging/checkout-api.json", Owner: "checkout-api",
	}, {
		// A tag-only entry in devel neither unpins staging's digest nor counts as a change:
		// payments-api is absent here. ledger lives in staging's root manifest.
		Service:    "ledger",
		Containers: []ContainerChange{{DockerName: "ledger", FromTag: "2.9.0", ToTag: "3.0.0"}},
		SourceFile: "environments/devel/payments-api.json", File: "environments/staging/manifest.json", Owner: "payments-api",
	}, {
		// New in staging, which has no search.json: its root manifest.
		Service: "search", New: true,
		Containers: []ContainerChange{{DockerName: "search", New: true, ToTag: "0.1.0"}},
		SourceFile: "environments/devel/search.json", File: "environments/staging/manifest.json", Owner: "search",
	}, {
		// Staging runs edge from the shared include: the promotion overrides it in
		// staging's root manifest rather than editing a file prod includes too.
		Service: "edge", Override: true,
		Containers: []ContainerChange{{DockerName: "edge", FromTag: "0.9.2", ToTag: "1.0.0"}},
		SourceFile: "environments/devel/manifest.json", File: "environments/staging/manifest.json",
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Change{}, "Entry")); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	if got[2].Entry.Name != "search" || got[2].Entry.Containers[0].DockerTag != "0.1.0" {
		t.Errorf("Entry of a new service = %+v, want devel's entry", got[2].Entry)
	}
	if d := Diff(resolve(t, fsys, "staging"), resolve(t, fsys, "staging")); len(d) != 0 {
		t.Errorf("Diff of a stage with itself = %+v, want none", d)
	}
}

func TestTargetFile(t *testing.T) {
	fsys := stages()
	staging := resolve(t, fsys, "staging")
	for src, want := range map[string]string{
		"environments/devel/checkout-api.json": "environments/staging/checkout-api.json",
		"environments/devel/search.json":       "environments/staging/manifest.json",
		"environments/devel/manifest.json":     "environments/staging/manifest.json",
		"environments/shared/platform.json":    "environments/staging/manifest.json", // never a shared file
	} {
		if got := TargetFile(src, staging); got != want {
			t.Errorf("TargetFile(%s) = %s, want %s", src, got, want)
		}
	}
}
