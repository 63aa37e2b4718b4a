package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the numeric user and group the image runs as (distroless' "nonroot").
const User = 65532

// binaries are the commands built into the image, each as /<name> in its own layer.
var binaries = []string{"reconciler", "prbot"}

// options are the command-line flags.
type options struct {
	ref       string
	tarball   string
	platforms []v1.Platform
	module    string
	base      string
	caCerts   string
	insecure  bool
	revision  string
	version   string
	created   time.Time
	binDir    string
	layout    string
}

// run parses args, builds the image and pushes it (or writes a tarball).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	idx, err := build(ctx, o)
	if err != nil {
		return err
	}
	out, err := publish(ctx, o, idx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, out)
	return nil
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	var platforms string
	fs.StringVar(&o.ref, "ref", "", "image reference to push, e.g. ghcr.io/acme/stagehand:0.1.0")
	fs.StringVar(&o.tarball, "tarball", "", "write a tarball (docker load / crane push) to this file instead of pushing; one platform only")
	fs.StringVar(&platforms, "platform", "linux/"+runtime.GOARCH, "comma-separated os/arch list; more than one pushes an image index")
	fs.StringVar(&o.module, "module", ".", "directory of the Stagehand module (holding go.mod)")
	fs.StringVar(&o.base, "base", "", "base image reference (e.g. gcr.io/distroless/static:nonroot); empty: a minimal base made here")
	fs.StringVar(&o.caCerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into the minimal base (for HTTPS to GitHub and registries)")
	fs.BoolVar(&o.insecure, "insecure", false, "allow a plain-HTTP registry (and the base image's registry)")
	fs.StringVar(&o.revision, "revision", "", "git revision recorded in the org.opencontainers.image.revision label")
	fs.StringVar(&o.version, "version", "", "version recorded in the org.opencontainers.image.version label and stamped into the binaries")
	fs.StringVar(&o.binDir, "bin-dir", "", "take the binaries from this directory (<name>_<os>_<arch>, built by hack/release) instead of building them")
	fs.StringVar(&o.layout, "layout", "", "write the image (or index) into this OCI image layout directory instead of pushing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if n := btoi(o.ref != "") + btoi(o.tarball != "") + btoi(o.layout != ""); n != 1 {
		return o, errors.New("give exactly one of --ref, --tarball and --layout")
	}
	for _, p := range strings.Split(platforms, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os == "" || arch == "" {
			return o, fmt.Errorf("invalid --platform %q: want os/arch, e.g. linux/amd64", p)
		}
		o.platforms = append(o.platforms, v1.Platform{OS: os, Architecture: arch})
	}
	if o.tarball != "" && len(o.platforms) != 1 {
		return o, fmt.Errorf("--tarball holds one platform, got %d", len(o.platforms))
	}
	o.created = time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return o, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: want seconds since 1970", s)
		}
		o.created = time.Unix(sec, 0).UTC()
	}
	return o, nil
}

// built is one image per platform, in the order of options.platforms.
type built []v1.Image

// build compiles the binaries for every platform and assembles the images.
func build(ctx context.Context, o options) (built, error) {
	dir, err := os.MkdirTemp("", "stagehand-image-")
	if err != nil {
		return nil, fmt.Errorf("creating build dir: %w", err)
	}
	defer os.RemoveAll(dir)
	bins, err := compile(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	return assemble(ctx, o, bins)
}

// compile builds every binary for every platform into dir: bins[i][j] is
// binaries[j] for o.platforms[i].
func compile(ctx context.Context, o options, dir string) ([][]string, error) {
	bins := make([][]string, len(o.platforms))
	for i, p := range o.platforms {
		for _, bin := range binaries {
			if o.binDir != "" {
				out := filepath.Join(o.binDir, bin+"_"+p.OS+"_"+p.Architecture)
				if _, err := os.Stat(out); err != nil {
					return nil, fmt.Errorf("taking %s for %s from --bin-dir: %w", bin, p, err)
				}
				bins[i] = append(bins[i], out)
				continue
			}
			out := filepath.Join(dir, p.OS+"-"+p.Architecture, bin)
			if err := goBuild(ctx, o, "./cmd/"+bin, p, out); err != nil {
				return nil, err
			}
			bins[i] = append(bins[i], out)
		}
	}
	return bins, nil
}

// assemble makes one image per platform from the compiled binaries. The same
// binaries and options always give the same digests.
func assemble(ctx context.Context, o options, bins [][]string) (built, error) {
	var base v1.Layer
	if o.base == "" {
		certs, err := os.ReadFile(o.caCerts)
		if err != nil {
			return nil, fmt.Errorf("reading CA certificates (set --ca-certs): %w", err)
		}
		if base, err = baseLayer(certs, o.created); err != nil {
			return nil, err
		}
	}
	var imgs built
	for i, p := range o.platforms {
		img, err := baseImage(ctx, o, p, base)
		if err != nil {
			return nil, err
		}
		for j, bin := range binaries {
			l, err := binaryLayer(bins[i][j], "/"+bin, o.created)
			if err != nil {
				return nil, err
			}
			if img, err = mutate.Append(img, mutate.Addendum{
				Layer:     l,
				History:   v1.History{CreatedBy: "hack/image: go build ./cmd/" + bin, Created: v1.Time{Time: o.created}},
				MediaType: types.OCILayer,
			}); err != nil {
				return nil, fmt.Errorf("adding the %s layer: %w", bin, err)
			}
		}
		if img, err = configure(img, o, p); err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	return imgs, nil
}

// baseImage returns the image the binaries are added to: --base pulled for p,
// or the empty image plus the minimal base layer.
func baseImage(ctx context.Context, o options, p v1.Platform, base v1.Layer) (v1.Image, error) {
	if o.base != "" {
		ref, err := name.ParseReference(o.base, nameOpts(o)...)
		if err != nil {
			return nil, fmt.Errorf("parsing --base %q: %w", o.base, err)
		}
		img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithPlatform(p),
			remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return nil, fmt.Errorf("pulling base image %s for %s: %w", ref, p, err)
		}
		return img, nil
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:     base,
		History:   v1.History{CreatedBy: "hack/image: passwd, group, CA certificates, /tmp", Created: v1.Time{Time: o.created}},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the base layer: %w", err)
	}
	return img, nil
}

// configure sets the runtime configuration: entrypoint /reconciler, user
// 65532, platform, labels, reproducible creation time.
func configure(img v1.Image, o options, p v1.Platform) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: o.created}
	cf.Author = "hack/image"
	c := &cf.Config
	c.Entrypoint = []string{"/reconciler"}
	c.Cmd = nil
	c.User = fmt.Sprintf("%d:%d", User, User)
	c.WorkingDir = "/"
	c.Env = []string{"PATH=/", "HOME=/tmp", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels["org.opencontainers.image.title"] = "stagehand"
	c.Labels["org.opencontainers.image.source"] = "https://github.com/stagehand-gitops/stagehand"
	if o.revision != "" {
		c.Labels["org.opencontainers.image.revision"] = o.revision
	}
	if o.version != "" {
		c.Labels["org.opencontainers.image.version"] = o.version
	}
	c.Labels["org.opencontainers.image.created"] = o.created.Format(time.RFC3339)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("writing image config: %w", err)
	}
	return img, nil
}

// versionPkg is where `version`, GET /version and stagehand_build_info read
// the stamped version, commit and date.
const versionPkg = "github.com/stagehand-gitops/stagehand/internal/version"

// goBuild compiles pkg (relative to o.module) statically for p into out,
// stamped with o.version, o.revision and o.created.
func goBuild(ctx context.Context, o options, pkg string, p v1.Platform, out string) error {
	ldflags := "-s -w -X " + versionPkg + ".date=" + o.created.Format(time.RFC3339)
	if o.version != "" {
		ldflags += " -X " + versionPkg + ".version=" + o.version
	}
	if o.revision != "" {
		ldflags += " -X " + versionPkg + ".commit=" + o.revision
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", out, pkg)
	cmd.Dir = o.module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=")
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s: %w\n%s", pkg, p, err, stderr.String())
	}
	return nil
}

// tarFile is one entry of a layer.
type tarFile struct {
	name string
	mode int64
	uid  int
	dir  bool
	body []byte
}

// baseLayer holds what a static Go binary needs from an OS image.
func baseLayer(caCerts []byte, mtime time.Time) (v1.Layer, error) {
	nonroot := strconv.Itoa(User)
	return layer([]tarFile{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:" + nonroot + ":" + nonroot + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:" + nonroot + ":\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: caCerts},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: User, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}, mtime)
}

// binaryLayer holds the executable at path as target (e.g. /reconciler).
func binaryLayer(path, target string, mtime time.Time) (v1.Layer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading built binary: %w", err)
	}
	return layer([]tarFile{{name: strings.TrimPrefix(target, "/"), mode: 0o755, body: b}}, mtime)
}

// layer writes files into an uncompressed tar and wraps it as a gzip layer.
func layer(files []tarFile, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing layer entry %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, fmt.Errorf("writing layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer: %w", err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making layer: %w", err)
	}
	return l, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nameOpts(o options) []name.Option {
	if o.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}
