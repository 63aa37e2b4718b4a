// Package flagger is the proof (tests only) that Stagehand judges a workload
// that a Flagger Canary (flagger.app/v1beta1) targets by the Canary: its
// tests run the real Flagger (built by hack/flagger, started by
// testenv.WithFlagger) against the test API server with kwok's pods, and
// drive pkg/reconcile's Plan, Apply and Restore through canaries whose
// analysis webhooks, served by the test, pass or fail.
package flagger
