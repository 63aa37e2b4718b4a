// Package docs holds Stagehand's user documentation (Markdown beside this
// file). Its tests keep the documentation whole: every key of reconciler.yaml
// and pipeline.yaml has an entry in configuration.md, and every entry there
// is a key the code reads; every route of the HTTP API has an entry in
// api.md (checked in internal/api); and the import graph keeps the layering
// that ARCHITECTURE.md at the repository root draws.
package docs
