// Package faults is the fault suite: the real reconciler binary, run as
// separate OS processes (so that SIGKILL is real) against a real
// kube-apiserver, etcd and kwok (internal/testenv), a real git server
// (internal/gitserver), GitHub (internal/githubtest) and a registry
// (internal/registrytest), with one fault injected per case. Each case
// asserts the end state of the workloads and the history, and adds a row to
// the fault table printed when the suite ends (and written to
// $STAGEHAND_FAULTS_TABLE, default bin/faults.md).
//
// `go test` runs the short form; `make faults` sets STAGEHAND_FAULTS=long
// for the long outages the issue names (a git server down for 30 s).
//
// The package holds only tests.
package faults
