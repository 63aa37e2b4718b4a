// Package argorollouts is the proof of Stagehand's Argo Rollouts integration
// (tests only): a real Argo Rollouts controller, built from the Go module
// proxy by hack/rollouts (`make rollouts`), runs against the test API server
// with kwok's pods (testenv.WithArgoRollouts), and Stagehand's reconciler
// plans, patches, promotes, judges and restores Rollouts there, and runs
// AnalysisTemplates as verification tasks. Analyses use Argo Rollouts' web
// metric provider against an HTTP server the test serves.
package argorollouts
