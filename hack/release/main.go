// Command release builds a Stagehand release into dist/ and, when asked,
// publishes it:
//
//	go run ./hack/release --version v0.2.0 [--dist dist] [--key cosign.key]
//	go run ./hack/release --version v0.2.0 --push --registry ghcr.io/acme [--insecure]
//	go run ./hack/release verify --key dist/signing.pub --image ghcr.io/acme/stagehand:v0.2.0
//
// A release is: reconciler and prbot for linux and darwin on amd64 and arm64,
// stamped with the version, commit and date (`make release` calls this with
// VERSION); a CycloneDX SBOM of each binary from its Go build information;
// the multi-arch image (hack/image, from the linux binaries) as an OCI image
// layout with its SBOM; the chart packaged with version X.Y.Z and appVersion
// vX.Y.Z; an in-toto statement of SLSA provenance naming every artifact;
// SHA256SUMS, with a signature cosign verify-blob accepts. Binaries and the
// image are reproducible: the same commit gives the same bytes and digest
// (-trimpath, no VCS stamping, every time taken from SOURCE_DATE_EPOCH or the
// commit's time).
//
// With --push the image index goes to <registry>/stagehand:<version>, its
// signature and its attestations (SBOM, provenance) beside it the way cosign
// lays them out (tags sha256-<digest>.sig and .att), signed with --key (a
// PEM EC P-256 private key; without one a key is made in dist/signing.key),
// and the chart to oci://<registry>/charts with helm push. Nothing is pushed
// without --push.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}
