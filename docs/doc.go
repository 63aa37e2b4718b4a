// Package docs holds Stagehand's user documentation (Markdown beside this
// file). Its tests keep the documentation whole: every key of reconciler.yaml
// and pipeline.yaml has an entry in configuration.md, and every entry there
// is a key the code reads.
package docs
