package main

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// publish pushes the images to o.ref (one image, or an index of all platforms)
// and returns the reference with its digest; with --tarball it writes the file
// and returns its path.
func publish(ctx context.Context, o options, imgs built) (string, error) {
	if o.layout != "" {
		return writeLayout(o, imgs)
	}
	if o.tarball != "" {
		tag, err := name.NewTag("stagehand:latest")
		if err != nil {
			return "", fmt.Errorf("naming tarball image: %w", err)
		}
		if err := tarball.WriteToFile(o.tarball, tag, imgs[0]); err != nil {
			return "", fmt.Errorf("writing %s: %w", o.tarball, err)
		}
		return o.tarball, nil
	}
	ref, err := name.ParseReference(o.ref, nameOpts(o)...)
	if err != nil {
		return "", fmt.Errorf("parsing --ref %q: %w", o.ref, err)
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	var d v1.Hash
	if len(imgs) == 1 {
		if err := remote.Write(ref, imgs[0], ropts...); err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
		if d, err = imgs[0].Digest(); err != nil {
			return "", fmt.Errorf("digesting image: %w", err)
		}
	} else {
		idx := index(imgs, o.platforms)
		if err := remote.WriteIndex(ref, idx, ropts...); err != nil {
			return "", fmt.Errorf("pushing %s: %w", ref, err)
		}
		if d, err = idx.Digest(); err != nil {
			return "", fmt.Errorf("digesting image index: %w", err)
		}
	}
	out := ref.Context().Name()
	if t, ok := ref.(name.Tag); ok {
		out += ":" + t.TagStr()
	}
	return out + "@" + d.String(), nil
}

// index bundles one image per platform.
func index(imgs built, platforms []v1.Platform) v1.ImageIndex {
	adds := make([]mutate.IndexAddendum, len(imgs))
	for i, img := range imgs {
		p := platforms[i]
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}}
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	return mutate.AppendManifests(idx, adds...)
}

// writeLayout writes the image (one platform) or the index of all platforms
// into the OCI image layout o.layout, named o.version, and returns
// <layout>@<digest>.
func writeLayout(o options, imgs built) (string, error) {
	p, err := layout.Write(o.layout, empty.Index)
	if err != nil {
		return "", fmt.Errorf("creating OCI layout %s: %w", o.layout, err)
	}
	ann := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.version})
	var d v1.Hash
	if len(imgs) == 1 {
		err = p.AppendImage(imgs[0], ann)
		if err == nil {
			d, err = imgs[0].Digest()
		}
	} else {
		idx := index(imgs, o.platforms)
		err = p.AppendIndex(idx, ann)
		if err == nil {
			d, err = idx.Digest()
		}
	}
	if err != nil {
		return "", fmt.Errorf("writing OCI layout %s: %w", o.layout, err)
	}
	return o.layout + "@" + d.String(), nil
}
