// Command image builds Stagehand's container image without a Docker daemon and
// pushes it to a registry (or writes a tarball).
//
// The image is a static (CGO_ENABLED=0) build of cmd/reconciler and cmd/prbot,
// each in its own layer, on an empty base holding only /etc/passwd, /etc/group,
// CA certificates and /tmp; it runs as user 65532 with entrypoint /reconciler:
//
//	go run ./hack/image --ref ghcr.io/acme/stagehand:0.1.0 [--platform linux/amd64,linux/arm64]
//	go run ./hack/image --layout dist/image --bin-dir dist --version v0.2.0 (what hack/release does)
//
// It prints the pushed reference with its digest (repo:tag@sha256:...), the
// value for the chart's image.digest.
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
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
