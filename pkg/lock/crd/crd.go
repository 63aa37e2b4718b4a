// Package crd holds the CustomResourceDefinition of Stagehand's deploy
// locks (locks.stagehand.io), for the Helm chart and the tests to install.
package crd

import (
	"bytes"
	_ "embed"
)

//go:embed locks.stagehand.io.yaml
var locks []byte

// Locks returns the YAML of the locks.stagehand.io CustomResourceDefinition.
func Locks() []byte { return bytes.Clone(locks) }

// File is the name of the YAML file next to this package's source.
const File = "locks.stagehand.io.yaml"
