// Package registrytest runs a real in-process OCI registry (go-containerregistry's
// pkg/registry behind httptest) for tests that resolve or verify image digests.
package registrytest
