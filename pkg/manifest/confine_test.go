package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLimits(t *testing.T) {
	// A chain e -> 1 -> 2 -> ... -> 40 is deeper than the default 32.
	files := map[string]string{"e/manifest.json": `{"includes": ["./1.json"]}`}
	for i := 1; i <= 40; i++ {
		files[fmt.Sprintf("e/%d.json", i)] = fmt.Sprintf(`{"includes": ["./%d.json"]}`, i+1)
	}
	files["e/41.json"] = `{}`
	l := errorList(t, func() error { _, err := Resolve(t.Context(), Repo{FS: repo(files), Root: "."}, "e"); return err }())
	want := []Error{{File: "environments/e/32.json", Line: 1, Column: 15, Pointer: "/includes/0",
		Message: `include "./33.json" nests deeper than the limit of 32 levels`}}
	if diff := cmp.Diff(want, l.Errors); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Resolve(t.Context(), Repo{FS: repo(files), Root: "."}, "e", MaxDepth(41)); err != nil {
		t.Errorf("MaxDepth(41): %v", err)
	}
	// A file over 4 MiB.
	big := `{"services": [], "includes": [` + strings.Repeat(`"./x.json",`, 400000) + `"./x.json"]}`
	l = errorList(t, func() error {
		_, err := Resolve(t.Context(), Repo{FS: repo(map[string]string{"e/manifest.json": big}), Root: "."}, "e")
		return err
	}())
	if msg := l.Errors[0].Message; !strings.Contains(msg, "over the limit of 4194304 bytes") {
		t.Errorf("got %q", msg)
	}
	// Exponential diamonds are bounded by the include limit.
	files = map[string]string{"e/manifest.json": `{"includes": ["./d0.json", "./d0.json"]}`}
	for i := range 30 {
		files[fmt.Sprintf("e/d%d.json", i)] = fmt.Sprintf(`{"includes": ["./d%d.json", "./d%d.json"]}`, i+1, i+1)
	}
	files["e/d30.json"] = `{}`
	l = errorList(t, func() error { _, err := Resolve(t.Context(), Repo{FS: repo(files), Root: "."}, "e"); return err }())
	if len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Message, "over the limit of 100000 includes per environment") {
		t.Errorf("got %v", l)
	}
}

// TestSymlinks runs on a real directory: os.DirFS follows links, so Resolve
// must check them itself.
func TestSymlinks(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.json"), `{"services": [`+svcJSON("stolen", "1")+`]}`)
	write(t, filepath.Join(outside, "manifest.json"), `{}`)

	dir := t.TempDir()
	env := filepath.Join(dir, "environments", "e")
	write(t, filepath.Join(env, "real.json"), `{"services": [`+svcJSON("api", "1")+`]}`)
	write(t, filepath.Join(dir, "environments", "shared", "base.json"), `{"services": [`+svcJSON("base", "1")+`]}`)
	link(t, "real.json", filepath.Join(env, "inside.json"))
	link(t, "../shared", filepath.Join(env, "shared"))
	link(t, filepath.Join(outside, "secret.json"), filepath.Join(env, "absolute.json"))
	link(t, "../../../"+filepath.Base(outside)+"/secret.json", filepath.Join(env, "relative.json"))
	link(t, outside, filepath.Join(env, "outdir"))
	link(t, "loop2.json", filepath.Join(env, "loop1.json"))
	link(t, "loop1.json", filepath.Join(env, "loop2.json"))
	link(t, outside, filepath.Join(dir, "environments", "evil"))

	tests := []struct {
		include string
		want    string // message; "" means it resolves
	}{
		{"./inside.json", ""},
		{"./shared/base.json", ""},
		{"./absolute.json", "symbolic link points outside the repository"},
		{"./relative.json", "symbolic link points outside the repository"},
		{"./outdir/secret.json", "symbolic link points outside the repository"},
		{"./loop1.json", "too many levels of symbolic links"},
	}
	for _, tt := range tests {
		t.Run(tt.include, func(t *testing.T) {
			write(t, filepath.Join(env, "manifest.json"), fmt.Sprintf(`{"includes": [%q]}`, tt.include))
			got, err := Resolve(t.Context(), Repo{FS: os.DirFS(dir), Root: "."}, "e")
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Services) != 1 || got.Services[0].Name == "stolen" {
					t.Errorf("services = %+v", got.Services)
				}
				return
			}
			l := errorList(t, err)
			if len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Message, tt.want) {
				t.Fatalf("errors = %v, want one containing %q", l, tt.want)
			}
			if e := l.Errors[0]; e.File != "environments/e/manifest.json" || e.Line != 1 || e.Column != 15 || e.Pointer != "/includes/0" {
				t.Errorf("error at %s:%d:%d %s", e.File, e.Line, e.Column, e.Pointer)
			}
		})
	}
	t.Run("the inside link resolves to the real file", func(t *testing.T) {
		write(t, filepath.Join(env, "manifest.json"), `{"includes": ["./inside.json"]}`)
		got, err := Resolve(t.Context(), Repo{FS: os.DirFS(dir), Root: "."}, "e")
		if err != nil {
			t.Fatal(err)
		}
		if src := got.Services[0].Source; src != "environments/e/real.json" {
			t.Errorf("source = %q", src)
		}
	})
	t.Run("an environment directory linked outside", func(t *testing.T) {
		_, err := Resolve(t.Context(), Repo{FS: os.DirFS(dir), Root: "."}, "evil")
		l := errorList(t, err)
		if !strings.Contains(l.Error(), "symbolic link points outside the repository") {
			t.Errorf("got %v", l)
		}
	})
}

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
