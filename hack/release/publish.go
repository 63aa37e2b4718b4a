package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// How cosign lays signatures and attestations out in a registry.
const (
	simpleSigningType   = "application/vnd.dev.cosign.simplesigning.v1+json"
	dsseEnvelopeType    = "application/vnd.dsse.envelope.v1+json"
	annotationSignature = "dev.cosignproject.cosign/signature"
	annotationPredicate = "predicateType"
)

// publish pushes the image index of <dist>/image to <registry>/stagehand:<version>,
// its signature and attestations beside it, and the chart to
// oci://<registry>/charts.
func publish(ctx context.Context, o options, r *built, stdout io.Writer) error {
	if r.imageDigest == "" {
		return errors.New("pushing: the release has no image (no linux platform was built)")
	}
	ref, err := name.NewTag(o.registry+"/stagehand:"+o.version, nameOpts(o)...)
	if err != nil {
		return fmt.Errorf("naming the image in --registry %q: %w", o.registry, err)
	}
	p, err := layout.FromPath(filepath.Join(o.dist, "image"))
	if err != nil {
		return fmt.Errorf("reading the image layout: %w", err)
	}
	h, err := v1.NewHash(r.imageDigest)
	if err != nil {
		return fmt.Errorf("reading the image digest: %w", err)
	}
	if err := pushLayout(ref, p, h, remoteOpts(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s@%s\n", ref, r.imageDigest)
	if !o.noSign {
		sv, err := loadKey(options{key: keyPath(o), dist: o.dist})
		if err != nil {
			return err
		}
		ropts := remoteOpts(ctx)
		digest := ref.Context().Digest(r.imageDigest)
		if err := pushSignature(ref.Context(), digest, sv, ropts); err != nil {
			return err
		}
		sbom := imageStatement(r.imageDigest, cyclonedxBOM, r.imageSBOM)
		if err := pushAttestations(ref.Context(), digest, sv, []*statement{sbom, r.provenance}, ropts); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "signed and attested %s@%s\n", ref, r.imageDigest)
	}
	args := []string{"push", r.chart, "oci://" + o.registry + "/charts"}
	if o.insecure {
		args = append(args, "--plain-http")
	}
	out, err := helm(ctx, o, args...)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, out)
	return nil
}

// pushLayout pushes the image or image index h of the layout p to ref.
func pushLayout(ref name.Tag, p layout.Path, h v1.Hash, ropts []remote.Option) error {
	root, err := p.ImageIndex()
	if err != nil {
		return fmt.Errorf("reading the image layout: %w", err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading the image layout: %w", err)
	}
	for _, d := range m.Manifests {
		if d.Digest != h {
			continue
		}
		if d.MediaType.IsIndex() {
			idx, err := root.ImageIndex(h)
			if err != nil {
				return fmt.Errorf("reading image index %s from the layout: %w", h, err)
			}
			if err := remote.WriteIndex(ref, idx, ropts...); err != nil {
				return fmt.Errorf("pushing %s: %w", ref, err)
			}
			return nil
		}
		img, err := root.Image(h)
		if err != nil {
			return fmt.Errorf("reading image %s from the layout: %w", h, err)
		}
		if err := remote.Write(ref, img, ropts...); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		return nil
	}
	return fmt.Errorf("the image layout holds no %s", h)
}

// keyPath is the key to sign with: --key, else the one build made.
func keyPath(o options) string {
	if o.key != "" {
		return o.key
	}
	return filepath.Join(o.dist, "signing.key")
}

// sigTag is where cosign keeps what is attached to digest: tag
// sha256-<hex>.<suffix> of its repository.
func sigTag(repo name.Repository, digest name.Digest, suffix string) name.Tag {
	return repo.Tag(strings.Replace(digest.DigestStr(), ":", "-", 1) + "." + suffix)
}

// pushSignature pushes the cosign signature of digest: an image whose layer
// is the simple-signing payload naming the digest, its signature in the
// layer's annotation.
func pushSignature(repo name.Repository, digest name.Digest, s signature.Signer, ropts []remote.Option) error {
	b, err := json.Marshal(payload.Cosign{Image: digest})
	if err != nil {
		return fmt.Errorf("encoding the signature payload: %w", err)
	}
	sig, err := signBlob(s, b)
	if err != nil {
		return fmt.Errorf("signing %s: %w", digest, err)
	}
	img, err := mutate.Append(artifactBase(), mutate.Addendum{Layer: static.NewLayer(b, simpleSigningType),
		Annotations: map[string]string{annotationSignature: string(sig)}})
	if err != nil {
		return fmt.Errorf("making the signature of %s: %w", digest, err)
	}
	tag := sigTag(repo, digest, "sig")
	if err := remote.Write(tag, img, ropts...); err != nil {
		return fmt.Errorf("pushing signature %s: %w", tag, err)
	}
	return nil
}

// pushAttestations pushes statements about digest, each a signed DSSE
// envelope in a layer annotated with its predicate type.
func pushAttestations(repo name.Repository, digest name.Digest, s signature.Signer, sts []*statement, ropts []remote.Option) error {
	img := artifactBase()
	for _, st := range sts {
		env, err := attest(s, st)
		if err != nil {
			return err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(env, dsseEnvelopeType),
			Annotations: map[string]string{annotationSignature: "", annotationPredicate: st.PredicateType}}); err != nil {
			return fmt.Errorf("making the attestations of %s: %w", digest, err)
		}
	}
	tag := sigTag(repo, digest, "att")
	if err := remote.Write(tag, img, ropts...); err != nil {
		return fmt.Errorf("pushing attestations %s: %w", tag, err)
	}
	return nil
}

// artifactBase is the empty OCI image signatures and attestations are
// layers of.
func artifactBase() v1.Image {
	return mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
}

// verified is what verifyImage checked.
type verified struct {
	// Digest is the image index's.
	Digest string
	// Predicates are the attestations' statements, by predicate type.
	Predicates map[string]*statement
}

// verifyImage checks, as `cosign verify` and `cosign verify-attestation`
// do with a key, that ref's image has a signature by v over a payload naming
// its digest, and attestations signed by v about that digest: a CycloneDX
// SBOM and SLSA provenance.
func verifyImage(ctx context.Context, ref name.Reference, v signature.Verifier, ropts []remote.Option) (*verified, error) {
	desc, err := remote.Head(ref, ropts...)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", ref, err)
	}
	digest := ref.Context().Digest(desc.Digest.String())
	sigs, err := layers(sigTag(ref.Context(), digest, "sig"), ropts)
	if err != nil {
		return nil, err
	}
	var errs []error
	signed := false
	for _, l := range sigs {
		if l.mediaType != simpleSigningType {
			continue
		}
		if err := verifyBlob(v, l.body, []byte(l.annotations[annotationSignature])); err != nil {
			errs = append(errs, fmt.Errorf("signature of %s: %w", digest, err))
			continue
		}
		var p payload.SimpleContainerImage
		if err := json.Unmarshal(l.body, &p); err != nil {
			errs = append(errs, fmt.Errorf("signature payload of %s: %w", digest, err))
			continue
		}
		if p.Critical.Type != payload.CosignSignatureType || p.Critical.Image.DockerManifestDigest != digest.DigestStr() {
			errs = append(errs, fmt.Errorf("signature payload of %s names %s (%s)", digest, p.Critical.Image.DockerManifestDigest, p.Critical.Type))
			continue
		}
		signed = true
	}
	if !signed {
		return nil, fmt.Errorf("no valid signature of %s: %w", digest, errors.Join(errs...))
	}
	atts, err := layers(sigTag(ref.Context(), digest, "att"), ropts)
	if err != nil {
		return nil, err
	}
	out := &verified{Digest: digest.DigestStr(), Predicates: map[string]*statement{}}
	for _, l := range atts {
		if l.mediaType != dsseEnvelopeType {
			continue
		}
		st, err := openEnvelope(v, l.body)
		if err != nil {
			return nil, fmt.Errorf("attestation of %s: %w", digest, err)
		}
		if !slices.ContainsFunc(st.Subject, func(s subject) bool { return "sha256:"+s.Digest["sha256"] == digest.DigestStr() }) {
			return nil, fmt.Errorf("attestation %s of %s is about another subject", st.PredicateType, digest)
		}
		if st.PredicateType != l.annotations[annotationPredicate] {
			return nil, fmt.Errorf("attestation of %s: statement says %s, layer says %s", digest, st.PredicateType, l.annotations[annotationPredicate])
		}
		out.Predicates[st.PredicateType] = st
	}
	for _, want := range []string{cyclonedxBOM, slsaProvenance} {
		if out.Predicates[want] == nil {
			return nil, fmt.Errorf("no %s attestation of %s", want, digest)
		}
	}
	return out, nil
}

// layer is one layer of a signature or attestation image.
type layer struct {
	mediaType   string
	annotations map[string]string
	body        []byte
}

// layers reads the layers of the image at tag.
func layers(tag name.Tag, ropts []remote.Option) ([]layer, error) {
	img, err := remote.Image(tag, ropts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	var out []layer
	for _, d := range m.Layers {
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading layer %s of %s: %w", d.Digest, tag, err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, fmt.Errorf("reading layer %s of %s: %w", d.Digest, tag, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading layer %s of %s: %w", d.Digest, tag, err)
		}
		out = append(out, layer{mediaType: string(d.MediaType), annotations: d.Annotations, body: b})
	}
	return out, nil
}

// runVerify is `release verify --key signing.pub --image REF [--insecure]`.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("release verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var key, image string
	var insecure bool
	fs.StringVar(&key, "key", "", "PEM public key the release was signed with (signing.pub)")
	fs.StringVar(&image, "image", "", "image reference, e.g. ghcr.io/acme/stagehand:v0.2.0")
	fs.BoolVar(&insecure, "insecure", false, "allow a plain-HTTP registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if key == "" || image == "" {
		return errors.New("verify needs --key and --image")
	}
	v, err := loadPublicKey(key)
	if err != nil {
		return err
	}
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.ParseReference(image, nopts...)
	if err != nil {
		return fmt.Errorf("parsing --image %q: %w", image, err)
	}
	got, err := verifyImage(ctx, ref, v, remoteOpts(ctx))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s: signature and attestations (%s, %s) verified\n", ref.Context(), got.Digest, cyclonedxBOM, slsaProvenance)
	return nil
}

func remoteOpts(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

func nameOpts(o options) []name.Option {
	if o.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}
