//go:build tools

// Package rollouts pins the Argo Rollouts controller that build.sh builds.
package rollouts

import (
	_ "github.com/argoproj/argo-rollouts/cmd/rollouts-controller"
)
