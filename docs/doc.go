// Package docs holds Stagehand's user documentation: Markdown pages beside
// this file (getting started, how-to guides, concepts, troubleshooting) and
// the reference under reference/, built into a site by `make docs`
// (mkdocs.yml at the repository root). Its tests keep the documentation
// whole: every key of reconciler.yaml and pipeline.yaml has an entry in
// reference/configuration.md, and every entry there is a key the code reads;
// every route of the HTTP API has an entry in reference/api.md (checked in
// internal/api); the generated pages reference/commands.md and
// reference/metrics.md are what internal/reference renders now; every
// exported error has an entry in reference/errors.md; every link and anchor
// resolves; every YAML and JSON example parses, those marked with a loader's
// name (<!-- reconciler.yaml -->) with the binaries' own parsers; every
// reconciler and prbot command line parses with their command trees; every
// shell block is tagged runnable or not-runnable with a reason, and the
// runnable ones run, page by page, against an environment of the demo's
// parts (contributing.md); the recipes beside Helm, Argo CD and Flux are
// shown on the real API server; and the import graph keeps the layering
// that ARCHITECTURE.md draws.
package docs

//go:generate go run ../hack/docsgen -root ..
