// Package docs holds Stagehand's user documentation (Markdown beside this
// file; the reference pages under reference/). Its tests keep the
// documentation whole: every key of reconciler.yaml and pipeline.yaml has an
// entry in reference/configuration.md, and every entry there is a key the
// code reads; every route of the HTTP API has an entry in reference/api.md
// (checked in internal/api); the generated pages reference/commands.md and
// reference/metrics.md are what internal/reference renders now; and the
// import graph keeps the layering that ARCHITECTURE.md at the repository
// root draws.
package docs

//go:generate go run ../hack/docsgen -root ..
