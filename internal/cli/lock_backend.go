package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// lockDeps are what the lock commands read from the world; tests replace
// them through the command's context (withLockDeps).
type lockDeps struct {
	now    func() time.Time
	lookup lock.LookupEnv
	loc    *time.Location
}

type lockDepsKey struct{}

// withLockDeps makes the lock commands executed with ctx use deps.
func withLockDeps(ctx context.Context, d lockDeps) context.Context {
	return context.WithValue(ctx, lockDepsKey{}, d)
}

func lockDepsFrom(ctx context.Context) lockDeps {
	if d, ok := ctx.Value(lockDepsKey{}).(lockDeps); ok {
		return d
	}
	return lockDeps{now: time.Now, lookup: os.LookupEnv, loc: time.Local}
}

// lockBackend is what the commands need from a lock store: pkg/lock's REST
// Client, or its Service over Kubernetes storage (serviceBackend).
type lockBackend interface {
	Lock(ctx context.Context, req lock.LockRequest) (lock.Lock, error)
	Check(ctx context.Context, path string, t lock.Type, recursive bool) ([]lock.Lock, error)
	Unlock(ctx context.Context, path string, t lock.Type, recursive bool) ([]lock.Lock, error)
	Prune(ctx context.Context, prefix string) ([]lock.Lock, error)
	List(ctx context.Context, prefix string) ([]lock.Lock, error)
}

var (
	_ lockBackend = (*lock.Client)(nil)
	_ lockBackend = serviceBackend{}
)

// serviceBackend runs the lock rules in this process.
type serviceBackend struct{ *lock.Service }

func (s serviceBackend) Lock(ctx context.Context, req lock.LockRequest) (lock.Lock, error) {
	l := req.Lock
	if req.Duration != "" {
		d, err := lock.ParseDuration(req.Duration)
		if err != nil {
			return lock.Lock{}, &lock.InvalidError{Err: err}
		}
		l.ExpiresAt = s.Now().Add(d)
	}
	return s.Service.Lock(ctx, l)
}

// backendFlags choose where locks live.
type backendFlags struct {
	server     string
	tokenFile  string
	storage    string
	kubeconfig string
	namespace  string
}

func (f *backendFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "URL of the reconciler's API (default $STAGEHAND_SERVER)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the API bearer token (default: $STAGEHAND_TOKEN)")
	fl.StringVar(&f.storage, "storage", "", "talk to the storage directly instead of --server: kubernetes")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --storage kubernetes (default $KUBECONFIG, else in-cluster or ~/.kube/config)")
	fl.StringVar(&f.namespace, "namespace", "stagehand", "namespace of the lock objects for --storage kubernetes")
}

func (f *backendFlags) backend(d lockDeps) (lockBackend, error) {
	server := f.server
	if server == "" && f.storage == "" {
		server, _ = d.lookup("STAGEHAND_SERVER")
	}
	switch {
	case server != "" && f.storage != "":
		return nil, usagef("--server and --storage are mutually exclusive")
	case server != "":
		token, err := f.token(d)
		if err != nil {
			return nil, err
		}
		c, err := lock.NewClient(server, token)
		if err != nil {
			return nil, usagef("--server: %v", err)
		}
		return c, nil
	case f.storage == "kubernetes":
		cfg, err := f.restConfig(d)
		if err != nil {
			return nil, err
		}
		st, err := lock.NewKubernetesForConfig(cfg, f.namespace)
		if err != nil {
			return nil, err
		}
		svc, err := lock.New(st, lock.WithClock(d.now))
		if err != nil {
			return nil, err
		}
		return serviceBackend{svc}, nil
	case f.storage == "memory":
		return nil, usagef("--storage memory keeps locks in one process only; use --server with a reconciler configured with locks.storage: memory")
	case f.storage != "":
		return nil, usagef("invalid --storage %q: expected kubernetes (or use --server URL)", f.storage)
	}
	return nil, usagef("no lock store: pass --server URL (or set $STAGEHAND_SERVER) or --storage kubernetes")
}

func (f *backendFlags) token(d lockDeps) (string, error) {
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", usagef("--token-file: %s is empty", f.tokenFile)
		}
		return t, nil
	}
	if t, _ := d.lookup("STAGEHAND_TOKEN"); strings.TrimSpace(t) != "" {
		return strings.TrimSpace(t), nil
	}
	return "", usagef("--server needs a token: pass --token-file or set $STAGEHAND_TOKEN")
}

func (f *backendFlags) restConfig(d lockDeps) (*rest.Config, error) {
	path := f.kubeconfig
	if path == "" {
		path, _ = d.lookup("KUBECONFIG")
	}
	if path == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// lockFailure turns a refusal from the store into the seed's messages on
// stderr and exit code 1, a bad request into a usage error (exit 2), and
// passes other errors on (exit 1, printed by the main).
func lockFailure(cmd *cobra.Command, d lockDeps, err error) error {
	var (
		le *lock.LockedError
		te *lock.TypeError
		ie *lock.InvalidError
		ae *lock.APIError
	)
	w := cmd.ErrOrStderr()
	switch {
	case errors.As(err, &le):
		for _, l := range le.Locks {
			fmt.Fprintln(w, "Error:", l.BlockingMessage(d.loc))
		}
		return exitCode(1, nil)
	case errors.As(err, &ie):
		return usageError{ie}
	case errors.As(err, &te):
		fmt.Fprintln(w, "Error:", te.Error())
		return exitCode(1, nil)
	case errors.As(err, &ae) && ae.StatusCode == 409:
		fmt.Fprintln(w, "Error:", ae.Message)
		return exitCode(1, nil)
	}
	return err
}
