//go:build tools

// Package flagger pins the Flagger command that build.sh builds.
package flagger

import _ "github.com/fluxcd/flagger/cmd/flagger"
