// Package crds keeps Stagehand's CustomResourceDefinitions (locks.stagehand.io
// and environments.stagehand.io, the files the Helm chart ships in crds/) in
// the cluster: Apply, run by the reconciler at start, creates those missing
// and upgrades those older than this build's, by server-side apply with
// Stagehand's own field manager, and leaves alone those a newer build put
// there, so that a rolling upgrade never downgrades a definition. Which is
// newer is read from the annotation stagehand.io/crd-revision, raised with
// every change of a definition.
package crds
