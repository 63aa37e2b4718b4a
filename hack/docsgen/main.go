// Command docsgen writes the generated reference pages under docs/reference
// (`make docs-gen`, or `go generate ./docs`): the commands and flags of
// reconciler and prbot, and the metrics.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stagehand-gitops/stagehand/internal/reference"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := reference.Write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "docsgen:", err)
		os.Exit(1)
	}
}
