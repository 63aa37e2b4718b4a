package manifest

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden resolves every environment of the example repository and of
// testdata/repo and compares the JSON with testdata/golden/<repo>-<env>.json.
func TestGolden(t *testing.T) {
	repos := map[string]fs.FS{
		// examples/environments is the environments/ directory of a repo.
		"examples": os.DirFS("../../examples"),
		"repo":     os.DirFS("testdata/repo"),
	}
	for name, fsys := range repos {
		envs, err := Environments(fsys, ".")
		if err != nil {
			t.Fatal(err)
		}
		if len(envs) == 0 {
			t.Fatalf("%s: no environments", name)
		}
		for _, env := range envs {
			t.Run(name+"-"+env, func(t *testing.T) {
				e, err := Resolve(t.Context(), Repo{FS: fsys, Root: "."}, env)
				if err != nil {
					t.Fatal(err)
				}
				got, err := json.MarshalIndent(e, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
				golden := filepath.Join("testdata", "golden", name+"-"+env+".json")
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", golden, diff)
				}
				// The golden JSON decodes back into the same environment.
				var back Environment
				if err := json.NewDecoder(bytes.NewReader(want)).Decode(&back); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(e, &back); diff != "" {
					t.Errorf("round trip (-want +got):\n%s", diff)
				}
			})
		}
	}
}
