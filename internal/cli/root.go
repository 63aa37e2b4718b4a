package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// ExitError carries a process exit code through cobra; the mains exit with Code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return "" // already reported; the main prints nothing more
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// exitCode wraps err so that the binary exits with code.
func exitCode(code int, err error) error { return &ExitError{Code: code, Err: err} }

// Code returns the exit code err asks for: 0 for nil, the ExitError's code,
// 2 for a usage error, 1 otherwise.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if isUsage(err) {
		return 2
	}
	return 1
}

// usageError marks an error in the command line itself (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// usagef returns a usage error (exit code 2).
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// reconcilerCommands lists the constructors of the reconciler's subcommands.
var reconcilerCommands = []func() *cobra.Command{newManifestCommand, newPolicyCommand, newLockCommand, newUnlockCommand, newCheckCommand, newPruneCommand, newListCommand, newPlanCommand, newApplyCommand, newRunCommand, newApproveCommand, newRejectCommand, newHistoryCommand, newStatusCommand, newRollbackCommand, newReleaseCommand, newLoginCommand, newVersionCommand, newWaitCommand}

// prbotCommands lists the constructors of prbot's subcommands.
var prbotCommands = []func() *cobra.Command{newPrbotBumpCommand, newPrbotPromoteCommand, newPrbotServeCommand, newVersionCommand}

// NewReconciler returns the root command of the reconciler binary.
func NewReconciler(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "reconciler",
		Short:         "Deploy what the manifests repository says, and nothing else",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	return finish(root, stdout, stderr, reconcilerCommands)
}

// NewPrbot returns the root command of the prbot binary.
func NewPrbot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "prbot",
		Short:         "Open bump and promotion pull requests on the manifests repository",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	return finish(root, stdout, stderr, prbotCommands)
}

func finish(root *cobra.Command, stdout, stderr io.Writer, cmds []func() *cobra.Command) *cobra.Command {
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, c := range cmds {
		root.AddCommand(c())
	}
	return root
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
	return Code(err)
}
