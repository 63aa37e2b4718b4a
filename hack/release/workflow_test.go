package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// TestWorkflows runs actionlint (the library, pinned in go.mod) over every
// GitHub Actions workflow: syntax, expressions, action inputs, permissions
// and the shell of each run step as far as it checks without shellcheck.
func TestWorkflows(t *testing.T) {
	dir := filepath.Join("..", "..", ".github", "workflows")
	files, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no workflow in %s", dir)
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			errs, err := l.LintFile(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Errorf("%s:%d:%d: %s [%s]", f, e.Line, e.Column, e.Message, e.Kind)
			}
		})
	}
}

// TestReleaseWorkflow: the release workflow runs on a version tag, signs
// keyless (id-token), and builds with the tool a workstation uses.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`- "v[0-9]+.[0-9]+.[0-9]+"`, "id-token: write", "go run ./hack/release", "cosign sign --yes",
		"cosign attest --yes --type cyclonedx", "cosign attest --yes --type slsaprovenance1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("release.yaml does not say %q", want)
		}
	}
}

// TestWorkflowLintCatches: the check fails on a broken workflow (an
// unknown expression context), so a clean result means something.
func TestWorkflowLintCatches(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bad.yaml")
	bad := "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope.ref }} ${{ secretz.X }}\n"
	if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) == 0 {
		t.Error("actionlint found nothing wrong in a workflow naming an undefined context")
	}
}
