package manifest

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// guardFS serves the repository under "repo/" of a MapFS whose top level
// also holds a secret that symbolic links in the repository point at. It
// records any attempt to follow those links.
type guardFS struct {
	m        fstest.MapFS
	followed []string
}

var outsideLinks = []string{"environments/e/out.json", "environments/e/outabs.json", "environments/e/outdir"}

func (g *guardFS) check(name string) {
	for _, l := range outsideLinks {
		if name == l || strings.HasPrefix(name, l+"/") {
			g.followed = append(g.followed, name)
		}
	}
}

func (g *guardFS) Open(name string) (fs.File, error) {
	g.check(name)
	return g.m.Open("repo/" + name)
}

func (g *guardFS) ReadFile(name string) ([]byte, error) {
	g.check(name)
	return g.m.ReadFile("repo/" + name)
}

func (g *guardFS) Stat(name string) (fs.FileInfo, error) {
	g.check(name)
	return g.m.Stat("repo/" + name)
}

func (g *guardFS) ReadLink(name string) (string, error)   { return g.m.ReadLink("repo/" + name) }
func (g *guardFS) Lstat(name string) (fs.FileInfo, error) { return g.m.Lstat("repo/" + name) }

func newGuardFS(root, inc []byte) *guardFS {
	secret := []byte(`{"services": [{"name": "stolen", "containers": [{"dockerTag": "1"}]}]}`)
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
	}
	return &guardFS{m: fstest.MapFS{
		"secret.json":                       {Data: secret},
		"outside/secret.json":               {Data: secret},
		"repo/environments/e/manifest.json": {Data: root},
		"repo/environments/e/a.json":        {Data: inc},
		"repo/environments/e/b.json":        {Data: []byte(`{"includes": ["./a.json", "../shared/c.json"]}`)},
		"repo/environments/shared/c.json":   {Data: []byte(`{"services": [{"name": "c", "containers": [{"dockerTag": "1"}]}]}`)},
		"repo/environments/e/in.json":       link("a.json"),
		"repo/environments/e/sharedlink":    link("../shared"),
		"repo/environments/e/out.json":      link("../../../secret.json"),
		"repo/environments/e/outabs.json":   link("/secret.json"),
		"repo/environments/e/outdir":        link("../../../outside"),
	}}
}

// FuzzResolve feeds arbitrary bytes as the root manifest and as one included
// file. Resolve must not panic or hang, must never follow a link out of the
// repository, and must return either a sane environment or an ErrorList.
func FuzzResolve(f *testing.F) {
	for _, c := range badCases() {
		f.Add([]byte(c.files["e/manifest.json"]), []byte(okSvc))
	}
	f.Add([]byte(rfcExample), []byte(`{"services": []}`))
	f.Add([]byte(`{"includes": ["./in.json", "./b.json", "./sharedlink/c.json"]}`), []byte(`{"services": [`+okSvc+`]}`))
	f.Add([]byte(`{"includes": ["./out.json", "./outabs.json", "./outdir/secret.json", "../../secret.json"]}`), []byte(`{}`))
	f.Add([]byte(`{"includes": ["./a.json"]}`), []byte(`{"includes": ["./manifest.json", "./b.json"]}`))
	f.Fuzz(func(t *testing.T, root, inc []byte) {
		g := newGuardFS(root, inc)
		env, err := Resolve(t.Context(), Repo{FS: g, Root: "."}, "e")
		if len(g.followed) > 0 {
			t.Fatalf("followed links out of the repository: %v", g.followed)
		}
		if err != nil {
			var l *ErrorList
			if !errors.As(err, &l) {
				t.Fatalf("error is not an *ErrorList: %v", err)
			}
			if len(l.Errors) == 0 || len(l.Errors) > DefaultMaxErrors {
				t.Fatalf("%d errors", len(l.Errors))
			}
			for _, e := range l.Errors {
				if e.File == "" || e.Message == "" || e.Line < 0 || e.Column < 0 || strings.HasPrefix(e.File, "..") {
					t.Fatalf("bad error %#v", e)
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range env.Services {
			if s.Name == "stolen" {
				t.Fatal("read a file outside the repository")
			}
			if checkName(s.Name) != "" || seen[s.Name] || s.Source == "" {
				t.Fatalf("bad service %+v", s)
			}
			seen[s.Name] = true
			for _, c := range s.Containers {
				if c.DockerName == "" || checkTag(c.DockerTag) != "" {
					t.Fatalf("bad container %+v", c)
				}
			}
		}
		// A valid root manifest can be edited and stays valid.
		if ed, err := Edit("m.json", root); err == nil && len(ed.Services()) > 0 {
			name := ed.Services()[0]
			if err := ed.AddService(Service{Name: "zz-fuzz", Containers: []Container{{DockerTag: "1"}}}); err != nil && !errors.Is(err, ErrExists) {
				t.Fatalf("AddService: %v", err)
			}
			if err := ed.RemoveService(name); err != nil {
				t.Fatalf("RemoveService: %v", err)
			}
			if _, err := Edit("m.json", ed.Bytes()); err != nil {
				t.Fatalf("edited file invalid: %v\n%s", err, ed.Bytes())
			}
		}
	})
}

// TestGuardFS checks the fuzz harness itself: links inside resolve, links
// outside are refused before anything follows them.
func TestGuardFS(t *testing.T) {
	g := newGuardFS([]byte(`{"includes": ["./in.json", "./sharedlink/c.json"]}`), []byte(`{"services": [`+okSvc+`]}`))
	env, err := Resolve(t.Context(), Repo{FS: g, Root: "."}, "e")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(env); len(got) != 2 || got[0] != "api@e/a.json" || got[1] != "c@shared/c.json" {
		t.Errorf("services = %v", got)
	}
	for _, inc := range []string{"./out.json", "./outabs.json", "./outdir/secret.json"} {
		g := newGuardFS([]byte(`{"includes": ["`+inc+`"]}`), nil)
		_, err := Resolve(t.Context(), Repo{FS: g, Root: "."}, "e")
		l := errorList(t, err)
		if !strings.Contains(l.Error(), "symbolic link points outside the repository") || len(g.followed) > 0 {
			t.Errorf("%s: %v (followed %v)", inc, l, g.followed)
		}
	}
}
