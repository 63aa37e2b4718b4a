// Package verify runs the verification tasks of an environment after a
// rollout finished: a Kubernetes Job that must succeed, HTTP requests that
// must answer as expected, PromQL queries that must stay on the right
// side of a threshold, and Argo Rollouts AnalysisTemplates run as
// AnalysisRuns, each for a bounded time, each judged pass, warning or
// fail with a message saying why.
//
// Tasks are parsed from the properties of a pipeline.yaml sequence task with
// ParseTask and run in order by a Verifier; the first task that fails ends the
// run. The package imports nothing of the reconciler: the caller says which
// environment, revision, versions and targets a run is about.
package verify
