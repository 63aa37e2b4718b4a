package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// binaries are the commands a release ships.
var binaries = []string{"reconciler", "prbot"}

// defaultPlatforms are the os/arch pairs binaries are built for; the image
// holds the linux ones.
const defaultPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

// versionPkg is where the binaries read their stamped version.
const versionPkg = "github.com/stagehand-gitops/stagehand/internal/version"

// statePkg is where the binaries read a stamped state schema (--state-schema).
const statePkg = "github.com/stagehand-gitops/stagehand/internal/state"

// source is where the provenance and the image labels say the code is from.
const source = "https://github.com/stagehand-gitops/stagehand"

// semver is a release version: v, then MAJOR.MINOR.PATCH, then an optional
// pre-release.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// options are the command-line flags.
type options struct {
	version   string
	dist      string
	module    string
	platforms []platform
	commit    string
	created   time.Time
	key       string
	noSign    bool
	push      bool
	registry  string
	insecure  bool
	helm      string
	// stateSchema, when above 0, is the state schema the binaries are
	// stamped to write (internal/state's schemaStamp): a test's knob.
	stateSchema int
}

// platform is one os/arch.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// run dispatches: `verify ...` checks a pushed release, anything else builds one.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "verify" {
		return runVerify(ctx, args[1:], stdout, stderr)
	}
	o, err := parseFlags(ctx, args, stderr)
	if err != nil {
		return err
	}
	r, err := build(ctx, o, stderr)
	if err != nil {
		return err
	}
	if o.push {
		if err := publish(ctx, o, r, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "release %s in %s: image %s\n", o.version, o.dist, r.imageDigest)
	return nil
}

func parseFlags(ctx context.Context, args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var platforms, epoch string
	fs.StringVar(&o.version, "version", "", "release version, vMAJOR.MINOR.PATCH[-pre] (required)")
	fs.StringVar(&o.dist, "dist", "dist", "directory the release is written to (emptied first)")
	fs.StringVar(&o.module, "module", ".", "directory of the Stagehand module (holding go.mod)")
	fs.StringVar(&platforms, "platform", defaultPlatforms, "comma-separated os/arch list the binaries are built for; the image holds the linux ones")
	fs.StringVar(&o.commit, "commit", "", "git commit recorded (default: git rev-parse HEAD in --module)")
	fs.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since 1970 every timestamp of the build is set to (default: $SOURCE_DATE_EPOCH, else the commit's time)")
	fs.StringVar(&o.key, "key", "", "PEM EC P-256 private key to sign with (default: a new key written to <dist>/signing.key)")
	fs.BoolVar(&o.noSign, "no-sign", false, "sign nothing with a key (the release workflow signs keyless with cosign instead)")
	fs.BoolVar(&o.push, "push", false, "push the image with its signature and attestations, and the chart, to --registry")
	fs.StringVar(&o.registry, "registry", "", "registry and namespace pushed to, e.g. ghcr.io/acme: the image goes to <registry>/stagehand, the chart to oci://<registry>/charts")
	fs.BoolVar(&o.insecure, "insecure", false, "allow a plain-HTTP registry")
	fs.StringVar(&o.helm, "helm", "", "helm binary (default: helm in $PATH, else <module>/bin/helm)")
	fs.IntVar(&o.stateSchema, "state-schema", 0, "for tests of upgrades only: stamp the binaries to write this state schema, above the source's, which builds without it refuse (never set in a release)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !semver.MatchString(o.version) {
		return o, fmt.Errorf("invalid --version %q: want vMAJOR.MINOR.PATCH, e.g. v0.2.0", o.version)
	}
	if o.stateSchema != 0 && o.stateSchema <= state.SchemaVersion {
		return o, fmt.Errorf("invalid --state-schema %d: want a version above this source's state schema %d", o.stateSchema, state.SchemaVersion)
	}
	if o.push && o.registry == "" {
		return o, errors.New("--push needs --registry, e.g. --registry ghcr.io/acme")
	}
	for _, p := range strings.Split(platforms, ",") {
		goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || arch == "" {
			return o, fmt.Errorf("invalid --platform %q: want os/arch, e.g. linux/amd64", p)
		}
		o.platforms = append(o.platforms, platform{goos, arch})
	}
	if o.commit == "" {
		out, err := git(ctx, o.module, "rev-parse", "HEAD")
		if err != nil {
			return o, fmt.Errorf("finding the commit (set --commit): %w", err)
		}
		o.commit = out
	}
	if epoch == "" {
		out, err := git(ctx, o.module, "show", "-s", "--format=%ct", o.commit)
		if err != nil {
			return o, fmt.Errorf("finding the commit's time (set --source-date-epoch): %w", err)
		}
		epoch = out
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || sec < 0 {
		return o, fmt.Errorf("invalid source date epoch %q: want seconds since 1970", epoch)
	}
	o.created = time.Unix(sec, 0).UTC()
	if o.helm == "" {
		if p, err := exec.LookPath("helm"); err == nil {
			o.helm = p
		} else {
			o.helm = filepath.Join(o.module, "bin", "helm")
		}
	}
	return o, nil
}

// chartVersion is the chart's version: the release's without its v.
func (o options) chartVersion() string { return strings.TrimPrefix(o.version, "v") }

// built is what build wrote into dist.
type built struct {
	// files are the artifacts checksummed and named in the provenance, by
	// name relative to dist.
	files []string
	// imageDigest is the image index's digest (sha256:...).
	imageDigest string
	// imageSBOM and provenance are the attestations' statements' predicates.
	imageSBOM  []byte
	provenance *statement
	chart      string
}

// build writes the whole release into o.dist.
func build(ctx context.Context, o options, log io.Writer) (*built, error) {
	started := time.Now().UTC()
	if err := os.RemoveAll(o.dist); err != nil {
		return nil, fmt.Errorf("emptying %s: %w", o.dist, err)
	}
	if err := os.MkdirAll(o.dist, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", o.dist, err)
	}
	r := &built{}
	var linux []string
	for _, p := range o.platforms {
		for _, bin := range binaries {
			name := bin + "_" + p.os + "_" + p.arch
			fmt.Fprintf(log, "building %s\n", name)
			if err := goBuild(ctx, o, "./cmd/"+bin, p, filepath.Join(o.dist, name)); err != nil {
				return nil, err
			}
			sbom, err := binarySBOM(o, filepath.Join(o.dist, name), bin, p)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(o.dist, name+".cdx.json"), sbom, 0o644); err != nil {
				return nil, fmt.Errorf("writing the SBOM of %s: %w", name, err)
			}
			r.files = append(r.files, name, name+".cdx.json")
		}
		if p.os == "linux" {
			linux = append(linux, p.String())
		}
	}
	if len(linux) > 0 {
		fmt.Fprintf(log, "assembling the image for %s\n", strings.Join(linux, ","))
		d, err := image(ctx, o, linux)
		if err != nil {
			return nil, err
		}
		r.imageDigest = d
		var bins []string
		for _, p := range o.platforms {
			if p.os == "linux" {
				for _, bin := range binaries {
					bins = append(bins, filepath.Join(o.dist, bin+"_"+p.os+"_"+p.arch))
				}
			}
		}
		if r.imageSBOM, err = imageSBOM(o, d, bins); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(o.dist, "image.cdx.json"), r.imageSBOM, 0o644); err != nil {
			return nil, fmt.Errorf("writing the image's SBOM: %w", err)
		}
		if err := os.WriteFile(filepath.Join(o.dist, "image.digest"), []byte(d+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("writing the image's digest: %w", err)
		}
		r.files = append(r.files, "image.cdx.json")
	}
	fmt.Fprintln(log, "packaging the chart")
	chart, err := packageChart(ctx, o)
	if err != nil {
		return nil, err
	}
	r.chart = chart
	r.files = append(r.files, filepath.Base(chart))
	slices.Sort(r.files)

	sums, err := checksums(o.dist, r.files)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.dist, "SHA256SUMS"), sums, 0o644); err != nil {
		return nil, fmt.Errorf("writing SHA256SUMS: %w", err)
	}
	r.provenance, err = provenance(o, r, started, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(o.dist, "provenance.intoto.json"), r.provenance); err != nil {
		return nil, err
	}
	if o.noSign {
		return r, nil
	}
	k, err := loadKey(o)
	if err != nil {
		return nil, err
	}
	if err := signFiles(k, o.dist, r.provenance); err != nil {
		return nil, err
	}
	return r, nil
}

// goBuild compiles pkg statically for p into out, stamped and reproducible.
func goBuild(ctx context.Context, o options, pkg string, p platform, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", out, err)
	}
	ldflags := fmt.Sprintf("-s -w -X %[1]s.version=%[2]s -X %[1]s.commit=%[3]s -X %[1]s.date=%[4]s",
		versionPkg, o.version, o.commit, o.created.Format(time.RFC3339))
	if o.stateSchema != 0 {
		ldflags += fmt.Sprintf(" -X %s.schemaStamp=%d", statePkg, o.stateSchema)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", abs, pkg)
	cmd.Dir = o.module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s: %w\n%s", pkg, p, err, stderr.String())
	}
	return nil
}

// image assembles the image of the linux binaries with hack/image into
// <dist>/image (an OCI image layout) and returns the index's digest.
func image(ctx context.Context, o options, platforms []string) (string, error) {
	dist, err := filepath.Abs(o.dist)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", o.dist, err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/image", "--layout", filepath.Join(dist, "image"), "--bin-dir", dist,
		"--platform", strings.Join(platforms, ","), "--version", o.version, "--revision", o.commit)
	cmd.Dir = o.module
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(o.created.Unix(), 10))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("assembling the image with hack/image: %w\n%s", err, stderr.String())
	}
	_, d, ok := strings.Cut(strings.TrimSpace(stdout.String()), "@")
	if !ok || !strings.HasPrefix(d, "sha256:") {
		return "", fmt.Errorf("hack/image printed %q, want <layout>@sha256:...", stdout.String())
	}
	return d, nil
}

// packageChart packages charts/stagehand with the release's version and
// appVersion into dist and returns the archive's path.
func packageChart(ctx context.Context, o options) (string, error) {
	dist, err := filepath.Abs(o.dist)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", o.dist, err)
	}
	if _, err := helm(ctx, o, "package", filepath.Join(o.module, "charts", "stagehand"), "--version", o.chartVersion(),
		"--app-version", o.version, "--destination", dist); err != nil {
		return "", err
	}
	return filepath.Join(dist, "stagehand-"+o.chartVersion()+".tgz"), nil
}

// helm runs o.helm with args and returns its output.
func helm(ctx context.Context, o options, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, o.helm, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// checksums is SHA256SUMS of files in dir, in the format sha256sum -c reads.
func checksums(dir string, files []string) ([]byte, error) {
	var b bytes.Buffer
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	return b.Bytes(), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksumming %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksumming %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
