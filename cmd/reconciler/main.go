// Command reconciler deploys what the manifests repository says.
package main

import (
	"os"

	"github.com/stagehand-gitops/stagehand/internal/cli"
)

func main() { os.Exit(cli.Main(cli.NewReconciler)) }
