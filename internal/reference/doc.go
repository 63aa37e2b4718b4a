// Package reference renders the generated pages of docs/reference: every
// command and flag of reconciler and prbot, walked from their cobra trees
// (commands.md), and every Prometheus metric Stagehand defines, read from the
// metric definitions in the source (metrics.md). docs' tests compare the pages
// with what Render writes now and fail when they are stale; `make docs-gen`
// (or `go generate ./docs`) writes them again.
package reference
