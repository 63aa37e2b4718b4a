package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
)

// TestBuildPushPull builds the image from this module, pushes it to an
// in-process registry, pulls it back by digest and checks what a cluster
// will run: entrypoint, user, the static binaries and the minimal base.
func TestBuildPushPull(t *testing.T) {
	reg := registrytest.New(t)
	ref := reg.Ref("stagehand/stagehand", "test")
	var out, errOut bytes.Buffer
	args := []string{"--ref", ref, "--insecure", "--module", "../..", "--revision", "abc123", "--version", "0.1.0"}
	if err := run(t.Context(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	pushed := strings.TrimSpace(out.String())
	if !strings.HasPrefix(pushed, ref+"@sha256:") {
		t.Fatalf("output = %q, want %s@sha256:...", pushed, ref)
	}
	digest, err := name.NewDigest(pushed, name.Insecure)
	if err != nil {
		t.Fatalf("parsing pushed reference %q: %v", pushed, err)
	}
	img, err := remote.Image(digest, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("pulling %s: %v", digest, err)
	}
	// The tag points at the same image.
	tag, _ := name.NewTag(ref, name.Insecure)
	byTag, err := remote.Head(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("resolving %s: %v", tag, err)
	}
	if byTag.Digest.String() != digest.DigestStr() {
		t.Errorf("tag %s = %s, want %s", tag, byTag.Digest, digest.DigestStr())
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("reading config: %v", err)
	}
	type runtimeConfig struct {
		OS, Arch, User, WorkingDir string
		Entrypoint, Cmd            []string
		Revision, Version, Created string
	}
	want := runtimeConfig{OS: "linux", Arch: runtime.GOARCH, User: "65532:65532", WorkingDir: "/",
		Entrypoint: []string{"/reconciler"}, Revision: "abc123", Version: "0.1.0", Created: "1970-01-01T00:00:00Z"}
	got := runtimeConfig{OS: cf.OS, Arch: cf.Architecture, User: cf.Config.User, WorkingDir: cf.Config.WorkingDir,
		Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd,
		Revision: cf.Config.Labels["org.opencontainers.image.revision"], Version: cf.Config.Labels["org.opencontainers.image.version"],
		Created: cf.Config.Labels["org.opencontainers.image.created"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image config (-want +got):\n%s", diff)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("listing layers: %v", err)
	}
	var names [][]string
	for _, l := range layers {
		names = append(names, layerFiles(t, l))
	}
	wantLayers := [][]string{
		{"etc/", "etc/passwd", "etc/group", "etc/nsswitch.conf", "etc/ssl/", "etc/ssl/certs/",
			"etc/ssl/certs/ca-certificates.crt", "home/", "home/nonroot/", "tmp/"},
		{"reconciler"},
		{"prbot"},
	}
	if diff := cmp.Diff(wantLayers, names); diff != "" {
		t.Errorf("layer contents (-want +got):\n%s", diff)
	}

	fsys := extract(t, img)
	passwd, _ := os.ReadFile(filepath.Join(fsys, "etc/passwd"))
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
	}
	for _, bin := range binaries {
		p := filepath.Join(fsys, bin)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("/%s is not in the image: %v", bin, err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("/%s mode = %v, want 0755", bin, st.Mode().Perm())
		}
		assertStatic(t, p)
	}
	// The entrypoint is the real reconciler: it answers --help.
	help, err := exec.CommandContext(t.Context(), filepath.Join(fsys, "reconciler"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "reconciler") {
		t.Errorf("/reconciler --help: %v\n%s", err, help)
	}
	// Both binaries are stamped with the image's version and revision.
	for _, bin := range binaries {
		v, err := exec.CommandContext(t.Context(), filepath.Join(fsys, bin), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(v), "0.1.0") || !strings.Contains(string(v), "abc123") {
			t.Errorf("/%s version: %v\n%s, want version 0.1.0 and commit abc123", bin, err, v)
		}
	}
}

// TestReproducible assembles the image twice from the same binaries: the
// digests are equal, so a digest pinned in the chart's values names exactly
// one build (go build -trimpath is itself reproducible). The creation time
// (SOURCE_DATE_EPOCH) is part of what is pinned.
func TestReproducible(t *testing.T) {
	o, err := parseFlags([]string{"--ref", "example.com/stagehand:1", "--module", "../.."}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	bins, err := compile(t.Context(), o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	digest := func(o options) string {
		t.Helper()
		imgs, err := assemble(t.Context(), o, bins)
		if err != nil {
			t.Fatal(err)
		}
		d, err := imgs[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	first, second := digest(o), digest(o)
	if first != second {
		t.Errorf("the same binaries assembled twice: digests %s and %s differ", first, second)
	}
	later := o
	later.created = o.created.Add(time.Hour)
	if d := digest(later); d == first {
		t.Errorf("a different creation time gave the same digest %s", d)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "neither ref nor tarball", args: nil, want: "give exactly one of --ref, --tarball and --layout"},
		{name: "both", args: []string{"--ref", "r/x:1", "--tarball", "x.tar"}, want: "give exactly one of --ref, --tarball and --layout"},
		{name: "layout and ref", args: []string{"--ref", "r/x:1", "--layout", "dist/image"}, want: "give exactly one of --ref, --tarball and --layout"},
		{name: "bad platform", args: []string{"--ref", "r/x:1", "--platform", "amd64"}, want: `invalid --platform "amd64": want os/arch`},
		{name: "tarball with two platforms", args: []string{"--tarball", "x.tar", "--platform", "linux/amd64,linux/arm64"}, want: "--tarball holds one platform, got 2"},
		{name: "positional", args: []string{"--ref", "r/x:1", "extra"}, want: `unexpected arguments ["extra"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

func layerFiles(t *testing.T, l v1.Layer) []string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatalf("opening layer: %v", err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("reading layer: %v", err)
		}
		names = append(names, h.Name)
	}
}

// extract writes the image's flattened filesystem into a temporary directory.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatalf("reading image filesystem: %v", err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("reading %s: %v", h.Name, err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// assertStatic checks that path is an ELF executable without a dynamic
// loader: it runs on an image with no libc.
func assertStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s is not an ELF binary: %v", path, err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader (PT_INTERP): not a static build", path)
		}
	}
}

// TestBaseImage: with --base the binaries go on top of the given image (e.g.
// distroless) instead of the minimal base.
func TestBaseImage(t *testing.T) {
	reg := registrytest.New(t)
	base, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	baseRef, _ := name.NewTag(reg.Ref("distroless/static", "nonroot"), name.Insecure)
	if err := remote.Write(baseRef, base, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := []string{"--ref", reg.Ref("acme/stagehand", "on-base"), "--insecure", "--module", "../..", "--base", baseRef.String()}
	if err := run(t.Context(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	d, err := name.NewDigest(strings.TrimSpace(out.String()), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	baseLayers, _ := base.Layers()
	var got, want []string
	for _, l := range baseLayers {
		h, _ := l.Digest()
		want = append(want, h.String())
	}
	want = append(want, "reconciler", "prbot")
	for i, l := range layers {
		if i < len(baseLayers) {
			h, _ := l.Digest()
			got = append(got, h.String())
			continue
		}
		got = append(got, strings.Join(layerFiles(t, l), ","))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layers (-want +got):\n%s", diff)
	}
	cf, _ := img.ConfigFile()
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/reconciler" {
		t.Errorf("config user %q entrypoint %q, want 65532:65532 and [/reconciler]", cf.Config.User, cf.Config.Entrypoint)
	}
}
