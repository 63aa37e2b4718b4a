package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFuzzTargetsListed fails when a fuzz target (func FuzzX in a _test.go file) is missing from the
// Makefile's FUZZ_TARGETS, which `make test` runs for a few seconds each and `make fuzz` for longer: a
// target nobody runs finds nothing.
func TestFuzzTargetsListed(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?ms)^FUZZ_TARGETS := (.*?[^\\])$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile has no FUZZ_TARGETS := line")
	}
	listed := map[string]bool{}
	for _, f := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " ")) {
		listed[f] = true
	}
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	found := map[string]bool{}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			target := "./" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../"))) + ":" + string(m[1])
			found[target] = true
			if !listed[target] {
				t.Errorf("fuzz target %s is not in the Makefile's FUZZ_TARGETS: add it, so make test runs it", target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for l := range listed {
		if !found[l] {
			t.Errorf("the Makefile's FUZZ_TARGETS names %s, which no _test.go declares", l)
		}
	}
}
