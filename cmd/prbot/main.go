// Command prbot opens bump and promotion pull requests on the manifests repository.
package main

import (
	"os"

	"github.com/stagehand-gitops/stagehand/internal/cli"
)

func main() { os.Exit(cli.Main(cli.NewPrbot)) }
