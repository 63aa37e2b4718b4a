package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
)

// TestPublishIndex: several platforms are pushed as one image index whose
// entries carry their platform, so a node pulls the image for its own.
func TestPublishIndex(t *testing.T) {
	reg := registrytest.New(t)
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	var imgs built
	for range platforms {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	o := options{ref: reg.Ref("acme/stagehand", "0.1.0"), insecure: true, platforms: platforms}
	out, err := publish(t.Context(), o, imgs)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewDigest(out, name.Insecure)
	if err != nil {
		t.Fatalf("publish returned %q: %v", out, err)
	}
	idx, err := remote.Index(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("pulling index %s: %v", ref, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, d := range m.Manifests {
		got = append(got, d.Platform.String())
		want, _ := imgs[i].Digest()
		if d.Digest != want {
			t.Errorf("index entry %d = %s, want the %s image %s", i, d.Digest, platforms[i], want)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
		t.Errorf("index platforms (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(out, o.ref+"@sha256:") {
		t.Errorf("publish output %q does not start with %s@sha256:", out, o.ref)
	}
}

// TestPublishTarball writes the image to a file instead of a registry.
func TestPublishTarball(t *testing.T) {
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stagehand.tar")
	out, err := publish(t.Context(), options{tarball: path, platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}}, built{img})
	if err != nil {
		t.Fatal(err)
	}
	if out != path {
		t.Errorf("publish output = %q, want %q", out, path)
	}
	back, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	want, _ := img.Digest()
	got, err := back.Digest()
	if err != nil || got != want {
		t.Errorf("image in the tarball = %v (%v), want %s", got, err, want)
	}
}

// TestLayoutFromBinDir: with --bin-dir and --layout the image is assembled
// from binaries built elsewhere (hack/release's) and written, with its
// platforms' index, into an OCI image layout named after the version.
func TestLayoutFromBinDir(t *testing.T) {
	bins := t.TempDir()
	for _, p := range []string{"linux_amd64", "linux_arm64"} {
		for _, bin := range binaries {
			if err := os.WriteFile(filepath.Join(bins, bin+"_"+p), []byte(bin+" for "+p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "image")
	var out bytes.Buffer
	args := []string{"--layout", dir, "--bin-dir", bins, "--platform", "linux/amd64,linux/arm64", "--version", "v0.2.0"}
	if err := run(t.Context(), args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v0.2.0" {
		t.Fatalf("layout index = %+v, want one index named v0.2.0", m.Manifests)
	}
	if got, want := strings.TrimSpace(out.String()), dir+"@"+m.Manifests[0].Digest.String(); got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		fsys := extract(t, img)
		b, err := os.ReadFile(filepath.Join(fsys, "prbot"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Platform.String()+": "+string(b))
	}
	if diff := cmp.Diff([]string{"linux/amd64: prbot for linux_amd64", "linux/arm64: prbot for linux_arm64"}, got); diff != "" {
		t.Errorf("the images' /prbot (-want +got):\n%s", diff)
	}
}
