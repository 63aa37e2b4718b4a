// Package authoring holds the reconciler's commands for whoever writes the
// manifests repository and its rules, run on a checkout and reading no
// cluster and no API: `reconciler manifest resolve` and `validate` (an
// environment resolved as the reconciler resolves it, every error with its
// file and line) and `reconciler policy test` (an environment's approval
// rules and deploy windows over a plan file). Commands is what internal/cli
// composes into cli.NewReconciler.
package authoring
