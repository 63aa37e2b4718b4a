package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/stagehand-gitops/stagehand/internal/chart"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
)

const (
	testVersion = "v0.2.0"
	testEpoch   = "1764320000" // 2025-11-28T08:53:20Z
)

// releaseArgs are the flags of a release of this module for the test's
// platform, at a fixed commit and time.
func releaseArgs(t *testing.T, dist string) []string {
	t.Helper()
	h, err := chart.Find(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	commit, err := git(t.Context(), "../..", "rev-parse", "HEAD")
	if err != nil {
		commit = strings.Repeat("0", 40) // outside a checkout
	}
	return []string{"--version", testVersion, "--dist", dist, "--module", "../..", "--platform", "linux/" + runtime.GOARCH,
		"--commit", commit, "--source-date-epoch", testEpoch, "--helm", h.Path()}
}

// TestRelease builds a release, pushes it to a registry and checks it as a
// user would: the binaries are stamped, SHA256SUMS and its signature hold,
// the image's signature and its SBOM and provenance attestations verify
// with the release's public key (and not with another), and the chart is
// there with its version and appVersion. A second build of the same commit
// gives the same binaries, SBOMs and image digest.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and the image")
	}
	ctx := t.Context()
	reg := registrytest.New(t)
	first := filepath.Join(t.TempDir(), "dist")
	var out bytes.Buffer
	args := append(releaseArgs(t, first), "--push", "--registry", reg.Host()+"/acme", "--insecure")
	if err := run(ctx, args, &out, io.Discard); err != nil {
		t.Fatalf("release: %v\n%s", err, out.String())
	}
	commit := args[slices.Index(args, "--commit")+1]
	bin := "reconciler_linux_" + runtime.GOARCH

	t.Run("binaries stamped", func(t *testing.T) {
		for _, b := range binaries {
			v, err := exec.CommandContext(ctx, filepath.Join(first, b+"_linux_"+runtime.GOARCH), "version").CombinedOutput()
			if err != nil || !strings.Contains(string(v), testVersion) || !strings.Contains(string(v), commit[:12]) ||
				!strings.Contains(string(v), "2025-11-28T08:53:20Z") {
				t.Errorf("%s version: %v\n%s\nwant %s, commit %s, date 2025-11-28T08:53:20Z", b, err, v, testVersion, commit)
			}
		}
	})

	pub, err := loadPublicKey(filepath.Join(first, "signing.pub"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("checksums signed", func(t *testing.T) {
		sums, err := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := os.ReadFile(filepath.Join(first, "SHA256SUMS.sig"))
		if err != nil {
			t.Fatal(err)
		}
		if err := verifyBlob(pub, sums, sig); err != nil {
			t.Errorf("SHA256SUMS.sig: %v", err)
		}
		if err := verifyBlob(pub, append(sums, "0000  evil\n"...), sig); err == nil {
			t.Error("SHA256SUMS.sig verifies a SHA256SUMS with a line added")
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
			sum, file, _ := strings.Cut(line, "  ")
			got, err := fileSHA256(filepath.Join(first, file))
			if err != nil || got != sum {
				t.Errorf("%s: sha256 %s, SHA256SUMS says %s (%v)", file, got, sum, err)
			}
			names = append(names, file)
		}
		want := []string{"image.cdx.json", "prbot_linux_" + runtime.GOARCH, "prbot_linux_" + runtime.GOARCH + ".cdx.json",
			bin, bin + ".cdx.json", "stagehand-0.2.0.tgz"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("SHA256SUMS names (-want +got):\n%s", diff)
		}
	})

	ref, err := name.ParseReference(reg.Host()+"/acme/stagehand:"+testVersion, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ropts := []remote.Option{remote.WithContext(ctx)}
	t.Run("image signed and attested", func(t *testing.T) {
		got, err := verifyImage(ctx, ref, pub, ropts)
		if err != nil {
			t.Fatal(err)
		}
		digest, err := os.ReadFile(filepath.Join(first, "image.digest"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != strings.TrimSpace(string(digest)) {
			t.Errorf("pushed image %s, the release built %s", got.Digest, digest)
		}
		var bom cdx.BOM
		if err := cdx.NewBOMDecoder(bytes.NewReader(got.Predicates[cyclonedxBOM].Predicate), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
			t.Fatalf("decoding the SBOM attestation: %v", err)
		}
		var comps []string
		for _, c := range *bom.Components {
			comps = append(comps, c.Name)
		}
		for _, want := range []string{"reconciler", "prbot", "std", "k8s.io/client-go", "github.com/google/go-containerregistry"} {
			if !strings.Contains(strings.Join(comps, " "), want) {
				t.Errorf("the image SBOM names no %s among %d components", want, len(comps))
			}
		}
		if bom.Metadata.Component.Type != cdx.ComponentTypeContainer || !strings.Contains(bom.Metadata.Component.PackageURL, strings.Replace(got.Digest, ":", "%3A", 1)) {
			t.Errorf("the image SBOM is of %+v, want the container %s", bom.Metadata.Component, got.Digest)
		}
		var prov slsa
		if err := json.Unmarshal(got.Predicates[slsaProvenance].Predicate, &prov); err != nil {
			t.Fatal(err)
		}
		if deps := prov.BuildDefinition.ResolvedDependencies; len(deps) != 1 || deps[0].Digest["gitCommit"] != commit {
			t.Errorf("provenance built from %+v, want commit %s", deps, commit)
		}
		sum, err := fileSHA256(filepath.Join(first, bin))
		if err != nil {
			t.Fatal(err)
		}
		subjects := map[string]string{}
		for _, s := range got.Predicates[slsaProvenance].Subject {
			subjects[s.Name] = s.Digest["sha256"]
		}
		if subjects[bin] != sum || "sha256:"+subjects["stagehand"] != got.Digest {
			t.Errorf("provenance subjects %v, want %s %s and stagehand %s", subjects, bin, sum, got.Digest)
		}
		// The release's provenance file is the same statement, signed.
		env, err := os.ReadFile(filepath.Join(first, "provenance.intoto.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := openEnvelope(pub, bytes.TrimSpace(env)); err != nil {
			t.Errorf("provenance.intoto.jsonl: %v", err)
		}
	})

	t.Run("another key does not verify", func(t *testing.T) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		other, err := signature.LoadECDSAVerifier(&k.PublicKey, crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := verifyImage(ctx, ref, other, ropts); err == nil || !strings.Contains(err.Error(), "no valid signature") {
			t.Errorf("verifying with another key: %v, want no valid signature", err)
		}
	})

	t.Run("chart pushed", func(t *testing.T) {
		h, err := chart.Find(ctx)
		if err != nil {
			t.Fatal(err)
		}
		show, err := exec.CommandContext(ctx, h.Path(), "show", "chart", "oci://"+reg.Host()+"/acme/charts/stagehand",
			"--version", "0.2.0", "--plain-http").CombinedOutput()
		if err != nil {
			t.Fatalf("helm show chart: %v\n%s", err, show)
		}
		for _, want := range []string{"version: 0.2.0", "appVersion: " + testVersion} {
			if !strings.Contains(string(show), want) {
				t.Errorf("the pushed chart does not say %q:\n%s", want, show)
			}
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		// The second build signs nothing (as the release workflow, which
		// signs keyless afterwards): what is compared is what was built.
		second := filepath.Join(t.TempDir(), "dist")
		if err := run(ctx, append(releaseArgs(t, second), "--no-sign"), io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"signing.key", "signing.pub", "SHA256SUMS.sig", "provenance.intoto.jsonl"} {
			if _, err := os.Stat(filepath.Join(second, f)); err == nil {
				t.Errorf("--no-sign wrote %s", f)
			}
		}
		for _, f := range []string{bin, "prbot_linux_" + runtime.GOARCH, bin + ".cdx.json", "image.cdx.json", "image.digest"} {
			a, err := os.ReadFile(filepath.Join(first, f))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(second, f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs between two builds of the same commit", f)
			}
		}
	})
}

// TestFlags: what a release refuses before building anything.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no version", []string{"--commit", "abc", "--source-date-epoch", "1"}, `invalid --version ""`},
		{"version without v", []string{"--version", "0.2.0", "--commit", "abc", "--source-date-epoch", "1"}, `invalid --version "0.2.0"`},
		{"version with a path", []string{"--version", "v0.2.0/../x", "--commit", "abc", "--source-date-epoch", "1"}, "invalid --version"},
		{"push without registry", []string{"--version", "v0.2.0", "--push", "--commit", "abc", "--source-date-epoch", "1"}, "--push needs --registry"},
		{"bad platform", []string{"--version", "v0.2.0", "--platform", "linux", "--commit", "abc", "--source-date-epoch", "1"}, `invalid --platform "linux"`},
		{"bad epoch", []string{"--version", "v0.2.0", "--commit", "abc", "--source-date-epoch", "yesterday"}, `invalid source date epoch "yesterday"`},
		{"state schema not newer", []string{"--version", "v0.2.0", "--commit", "abc", "--source-date-epoch", "1", "--state-schema", "1"}, "invalid --state-schema 1"},
		{"state schema negative", []string{"--version", "v0.2.0", "--commit", "abc", "--source-date-epoch", "1", "--state-schema", "-2"}, "invalid --state-schema -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(context.Background(), tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}
