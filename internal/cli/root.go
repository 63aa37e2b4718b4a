package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/authoring"
	"github.com/stagehand-gitops/stagehand/internal/cli/bot"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/cli/locks"
)

// reconcilerCommands lists the constructors of the reconciler's
// subcommands; the lock commands (lock, unlock, check, prune, list) are
// internal/cli/locks'.
var reconcilerCommands = slices.Concat(authoring.Commands(), locks.Commands(), []func() *cobra.Command{newPlanCommand, newApplyCommand, newRunCommand, newApproveCommand, newRejectCommand, newBreakGlassCommand, newHistoryCommand, newDORACommand, newStatusCommand, newRollbackCommand, newReleaseCommand, newLoginCommand, newVersionCommand, newWaitCommand})

// prbotCommands lists the constructors of prbot's subcommands: its own
// (internal/cli/bot) and the version both binaries have.
var prbotCommands = append(bot.Commands(), newVersionCommand)

// NewReconciler returns the root command of the reconciler binary.
func NewReconciler(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "reconciler",
		Short:         "Deploy what the manifests repository says, and nothing else",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	return command.Root(root, stdout, stderr, reconcilerCommands)
}

// NewPrbot returns the root command of the prbot binary.
func NewPrbot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "prbot",
		Short:         "Open bump and promotion pull requests on the manifests repository",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	return command.Root(root, stdout, stderr, prbotCommands)
}

// Main runs the command tree that newRoot builds with the process's
// arguments, stdout and stderr, cancelled on SIGINT or SIGTERM, prints the
// error if there is one, and returns the process exit code.
func Main(newRoot func(stdout, stderr io.Writer) *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx)
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "Error:", err)
	}
	return command.Code(err)
}
