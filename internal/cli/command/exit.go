package command

import (
	"errors"
	"fmt"
	"io"

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

// Exit wraps err so that the binary exits with code (err nil: the command
// reported already, and the main prints nothing more).
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

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
	if IsUsage(err) {
		return 2
	}
	return 1
}

// usageError marks an error in the command line itself (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// Usage marks err as an error in the command line itself (exit code 2).
func Usage(err error) error { return usageError{err} }

// Usagef returns a usage error (exit code 2).
func Usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// IsUsage reports whether err is (or wraps) a usage error.
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// Root finishes a binary's root command: its output and error writers, flag
// errors as usage errors, and the subcommands cmds build.
func Root(root *cobra.Command, stdout, stderr io.Writer, cmds []func() *cobra.Command) *cobra.Command {
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, c := range cmds {
		root.AddCommand(c())
	}
	return root
}
