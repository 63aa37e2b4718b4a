package registrytest_test

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
)

func TestPushThenHead(t *testing.T) {
	reg := registrytest.New(t)
	want := reg.Push(t, "team/app", "1.2.3")
	ref, err := name.ParseReference(reg.Ref("team/app", "1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	if got := desc.Digest.String(); got != want {
		t.Errorf("digest = %s, want %s", got, want)
	}
	if again := reg.Push(t, "team/app", "1.2.3"); again == want {
		t.Errorf("second push returned the same digest %s; want a fresh random image", again)
	}
	if reg.ManifestRequests() == 0 {
		t.Errorf("ManifestRequests() = 0 after a HEAD")
	}
}

func TestBasicAuth(t *testing.T) {
	reg := registrytest.New(t, registrytest.WithBasicAuth("ci", "s3cret"))
	want := reg.Push(t, "team/app", "1")
	ref, err := name.ParseReference(reg.Ref("team/app", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(ref, remote.WithContext(t.Context())); err == nil {
		t.Errorf("anonymous HEAD succeeded; want 401")
	}
	desc, err := remote.Head(ref, remote.WithContext(t.Context()), remote.WithAuth(&authn.Basic{Username: "ci", Password: "s3cret"}))
	if err != nil {
		t.Fatalf("HEAD with credentials: %v", err)
	}
	if got, _ := reg.Digest(t.Context(), "team/app", "1"); desc.Digest.String() != want || got != want {
		t.Errorf("digests %s and %s, want %s", desc.Digest, got, want)
	}
}
