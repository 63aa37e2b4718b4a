// Package version says which build of Stagehand is running: its version, the
// commit it was built from, when, and with which Go. `make build` and
// `make release` stamp the version, commit and date with -ldflags; a plain
// `go build` in a checkout falls back to what the Go toolchain recorded (the
// module version, vcs.revision, vcs.time). The reconciler and prbot show it
// with their `version` command, at GET /version and as the
// stagehand_build_info metric.
package version
