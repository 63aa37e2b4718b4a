package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/waiter"
)

// waitFlags are the flags of `reconciler wait`.
type waitFlags struct {
	server, tokenFile string
	env, revision     string
	service           string
	timeout, interval time.Duration
	// kubeconfig, namespace and watchTimeout: the Environment object
	// watched instead of the API (waitkube.go).
	kubeconfig, namespace string
	watchTimeout          time.Duration
}

// newWaitCommand is `reconciler wait --env ENV [--revision SHA | --service NAME=VERSION] [--timeout 10m]`.
func newWaitCommand() *cobra.Command {
	var f waitFlags
	cmd := &cobra.Command{
		Use:   "wait --env ENV [--revision SHA | --service NAME=VERSION] [--timeout 10m]",
		Short: "Wait until a revision (or a service's version) is deployed and verified in an environment",
		Long: `Wait, through the API (a read-only token is enough), until the environment has
deployed a revision and its sequence passed: --revision SHA (a commit hash or a
prefix of at least 7 hex digits), --service NAME=VERSION (the revision that asks
for that version), or, with neither, the revision the environment observes now.
Progress is printed as it changes. Exit 0: deployed and verified. Exit 1:
failed, rejected, rolled back or superseded by a newer revision before it was
deployed (the message says which). Exit 2: timed out (also for bad flags).

With --kubeconfig it watches the environment's Environment object
(environments.stagehand.io, in the reconciler's state namespace: --namespace,
else the kubeconfig context's) instead of calling the API, by the same rules;
RBAC needs get, list and watch on environments. The object carries no service
versions: --service needs the API. It knows the last deploy only: wait for
the revision just pushed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.env, "env", "", "environment (required)")
	fl.StringVar(&f.revision, "revision", "", "commit to wait for")
	fl.StringVar(&f.service, "service", "", "NAME=VERSION: wait for the revision that deploys this version of the service")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long to wait")
	fl.DurationVar(&f.interval, "interval", 2*time.Second, "how often to read the environment (with --kubeconfig: the pause before a failed watch is retried)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "watch the Environment object through this kubeconfig instead of calling the API")
	fl.StringVar(&f.namespace, "namespace", "", "with --kubeconfig: the reconciler's state namespace (default: the kubeconfig context's)")
	fl.DurationVar(&f.watchTimeout, "watch-timeout", 5*time.Minute, "with --kubeconfig: how long each watch lasts before it is renewed by a new list")
	return cmd
}

func (f *waitFlags) run(cmd *cobra.Command) error {
	if f.env == "" {
		return command.Usagef("--env is required")
	}
	if f.timeout <= 0 || f.interval <= 0 {
		return command.Usagef("--timeout and --interval must be positive")
	}
	t := waiter.Target{Revision: f.revision}
	if f.service != "" {
		name, version, ok := strings.Cut(f.service, "=")
		if !ok || name == "" || version == "" {
			return command.Usagef("--service %q: want NAME=VERSION", f.service)
		}
		t.Service, t.Version = name, version
	}
	j, err := waiter.New(t)
	if err != nil {
		return command.Usagef("%v", err)
	}
	if f.kubeconfig != "" || f.namespace != "" {
		return f.runObject(cmd, j)
	}
	client, err := command.APIClient(f.server, f.tokenFile, command.ReadTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return command.DeployWait{Client: client, Env: f.env, Judge: j, Interval: f.interval, Timeout: f.timeout}.Run(ctx, cmd)
}
