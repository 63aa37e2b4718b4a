// Command reconciler deploys what the manifests repository says.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stagehand-gitops/stagehand/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewReconciler(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "Error:", err)
	}
	os.Exit(cli.Code(err))
}
