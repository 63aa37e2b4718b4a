package authoring

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// newManifestCommand is `reconciler manifest`: resolve and validate the
// manifests of a checked-out manifests repository.
func newManifestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Resolve and validate environment manifests",
	}
	cmd.AddCommand(newManifestResolveCommand(), newManifestValidateCommand())
	return cmd
}

// manifestFlags are the flags both subcommands share.
type manifestFlags struct {
	output           string
	allowUnknownKeys bool
}

func (f *manifestFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&f.allowUnknownKeys, "allow-unknown-keys", false, "report unknown keys as warnings instead of errors")
}

func (f *manifestFlags) check() error {
	if f.output != "text" && f.output != "json" {
		return command.Usagef("invalid --output %q: expected text or json", f.output)
	}
	return nil
}

// options are the manifest options --allow-unknown-keys stands for: those of
// reconciler.yaml's manifest.allowUnknownKeys.
func (f *manifestFlags) options() []manifest.Option {
	return wire.ManifestOptions(config.Manifest{AllowUnknownKeys: f.allowUnknownKeys})
}

// manifestDir checks the <dir> argument: a directory holding environments/.
func manifestDir(args []string) (string, error) {
	if len(args) != 1 {
		return "", command.Usagef("expected one argument, the directory holding environments/, got %d", len(args))
	}
	fi, err := os.Stat(args[0])
	if err != nil || !fi.IsDir() {
		return "", command.Usagef("%s is not a directory", args[0])
	}
	return args[0], nil
}

func newManifestResolveCommand() *cobra.Command {
	var (
		flags manifestFlags
		env   string
	)
	cmd := &cobra.Command{
		Use:   "resolve <dir> --env <env>",
		Short: "Print the effective services of one environment",
		Long: `Resolve environments/<env>/manifest.json under <dir> with its includes and print the
effective services, overrides, warnings and include tree. File names in the
output (root, source, layout, errors) are relative to <dir>; root is the
environment's manifest file. Exit 1 when the manifests are invalid (every
problem is listed), 2 on a usage error.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := manifestDir(args)
			if err != nil {
				return err
			}
			if err := flags.check(); err != nil {
				return err
			}
			if env == "" || strings.ContainsAny(env, `/\`) || env == "." || env == ".." {
				return command.Usagef("--env must name one environment directory, got %q", env)
			}
			e, err := manifest.Resolve(cmd.Context(), manifest.Repo{FS: os.DirFS(dir), Root: "."}, env, flags.options()...)
			if err != nil {
				return reportManifestErrors(cmd, flags.output, err)
			}
			if flags.output == "json" {
				return command.WriteJSON(cmd.OutOrStdout(), e)
			}
			printWarnings(cmd.ErrOrStderr(), e.Warnings)
			return printEnvironment(cmd.OutOrStdout(), e)
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVar(&env, "env", "", "environment to resolve (a directory under <dir>/environments)")
	return cmd
}

// reportManifestErrors prints an *manifest.ErrorList in the chosen format and
// returns exit code 1; other errors are returned as they are.
func reportManifestErrors(cmd *cobra.Command, output string, err error) error {
	var list *manifest.ErrorList
	if !errors.As(err, &list) {
		return err
	}
	if output == "json" {
		if werr := command.WriteJSON(cmd.OutOrStdout(), list); werr != nil {
			return werr
		}
		return command.Exit(1, nil)
	}
	fmt.Fprintln(cmd.ErrOrStderr(), list.Error())
	return command.Exit(1, nil)
}

func printWarnings(w io.Writer, warnings []manifest.Error) {
	for _, wr := range warnings {
		fmt.Fprintf(w, "warning: %s\n", wr.Error())
	}
}

func printEnvironment(w io.Writer, e *manifest.Environment) error {
	fmt.Fprintf(w, "environment: %s (%s)\n", e.Name, e.Root)
	fmt.Fprintf(w, "skipConfirmation: %t\n\n", e.SkipConfirmation)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tVERSION\tCONTAINER\tTAG\tDIGEST\tSOURCE")
	for _, s := range e.Services {
		version := s.Version
		if version == "" {
			version = "-"
		}
		if len(s.Containers) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\n", s.Name, version, s.Source)
		}
		for _, c := range s.Containers {
			digest := c.DockerDigest
			if digest == "" {
				digest = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, version, c.DockerName, c.DockerTag, digest, s.Source)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing services: %w", err)
	}
	if len(e.Overrides) > 0 {
		fmt.Fprintln(w, "\noverrides:")
		for _, o := range e.Overrides {
			fmt.Fprintf(w, "  %s: %s overrides %s\n", o.Service, locString(o.Winner), locString(o.Shadowed))
		}
	}
	fmt.Fprintln(w, "\nlayout:")
	printLayout(w, e.Layout, "  ")
	return nil
}

func locString(l manifest.Location) string {
	return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Column)
}

func printLayout(w io.Writer, l *manifest.Layout, indent string) {
	var names []string
	for _, s := range l.Services {
		n := s.Name
		if s.Overridden {
			n += " (overridden by " + s.OverriddenBy + ")"
		}
		names = append(names, n)
	}
	fmt.Fprintf(w, "%s%s", indent, l.File)
	if len(names) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(names, ", "))
	}
	fmt.Fprintln(w)
	for _, c := range l.Includes {
		printLayout(w, c, indent+"  ")
	}
}

// validation is one environment's result in `manifest validate -o json`.
type validation struct {
	Environment string           `json:"environment"`
	Valid       bool             `json:"valid"`
	Services    int              `json:"services"`
	Errors      []manifest.Error `json:"errors"`
	Omitted     int              `json:"omitted,omitempty"`
	Warnings    []manifest.Error `json:"warnings"`
}

func newManifestValidateCommand() *cobra.Command {
	var flags manifestFlags
	cmd := &cobra.Command{
		Use:   "validate <dir>",
		Short: "Check every environment's manifests",
		Long: `Resolve every environment under <dir>/environments and report every problem.
Exit 0 only if all environments are valid, 1 otherwise, 2 on a usage error.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := manifestDir(args)
			if err != nil {
				return err
			}
			if err := flags.check(); err != nil {
				return err
			}
			fsys := os.DirFS(dir)
			envs, err := manifest.Environments(fsys, ".")
			if errors.Is(err, fs.ErrNotExist) {
				return command.Exit(1, fmt.Errorf("no environments found: %s has no environments/ directory", dir))
			}
			if err != nil {
				return command.Exit(1, err)
			}
			if len(envs) == 0 {
				return command.Exit(1, fmt.Errorf("no environments found: no %s/environments/*/manifest.json", dir))
			}
			results := struct {
				Valid        bool         `json:"valid"`
				Environments []validation `json:"environments"`
			}{Valid: true}
			for _, name := range envs {
				v := validation{Environment: name, Valid: true, Errors: []manifest.Error{}, Warnings: []manifest.Error{}}
				e, err := manifest.Resolve(cmd.Context(), manifest.Repo{FS: fsys, Root: "."}, name, flags.options()...)
				var list *manifest.ErrorList
				switch {
				case errors.As(err, &list):
					v.Valid, results.Valid = false, false
					v.Errors, v.Omitted = list.Errors, list.Omitted
				case err != nil:
					return err
				default:
					v.Services, v.Warnings = len(e.Services), e.Warnings
				}
				results.Environments = append(results.Environments, v)
			}
			if flags.output == "json" {
				if err := command.WriteJSON(cmd.OutOrStdout(), results); err != nil {
					return err
				}
			} else {
				printValidation(cmd, results.Environments)
			}
			if !results.Valid {
				return command.Exit(1, nil)
			}
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

func printValidation(cmd *cobra.Command, vs []validation) {
	for _, v := range vs {
		printWarnings(cmd.ErrOrStderr(), v.Warnings)
		if v.Valid {
			fmt.Fprintf(cmd.OutOrStdout(), "ok       %s (%d services)\n", v.Environment, v.Services)
			continue
		}
		fmt.Fprintf(cmd.OutOrStdout(), "invalid  %s (%d problems)\n", v.Environment, len(v.Errors)+v.Omitted)
		for _, e := range v.Errors {
			fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
		}
		if v.Omitted > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "... and %d more problems in %s\n", v.Omitted, v.Environment)
		}
	}
}
