package locks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
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

func lockDepsFrom(ctx context.Context) (lockDeps, error) {
	if d, ok := ctx.Value(lockDepsKey{}).(lockDeps); ok {
		return d, nil
	}
	now, err := clock.Local(os.LookupEnv)
	if err != nil {
		return lockDeps{}, err
	}
	return lockDeps{now: now, lookup: os.LookupEnv, loc: time.Local}, nil
}

// lockBackend is what the commands need from a lock store: pkg/lock/lockapi's REST
// Client, or its Service over Kubernetes storage (serviceBackend).
type lockBackend interface {
	Lock(ctx context.Context, req lockapi.LockRequest) (lock.Lock, error)
	Check(ctx context.Context, path string, t lock.Type, recursive bool) ([]lock.Lock, error)
	Unlock(ctx context.Context, path string, t lock.Type, recursive bool) ([]lock.Lock, error)
	Prune(ctx context.Context, prefix string) ([]lock.Lock, error)
	List(ctx context.Context, prefix string) ([]lock.Lock, error)
}

var (
	_ lockBackend = (*lockapi.Client)(nil)
	_ lockBackend = serviceBackend{}
)

// serviceBackend runs the lock rules in this process.
type serviceBackend struct{ *lock.Service }

// Lock takes req's lock, turning a relative --duration into an expiry by
// the service's clock (the REST server does the same on its side).
func (s serviceBackend) Lock(ctx context.Context, req lockapi.LockRequest) (lock.Lock, error) {
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
	table      string // the seed's DynamoDB table: refused, DynamoDB is out of scope
}

func (f *backendFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	command.AddAPIFlags(fl, &f.server, &f.tokenFile)
	fl.StringVar(&f.storage, "storage", "", "talk to the storage directly instead of --server: kubernetes (the seed's dynamodb is not supported)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for --storage kubernetes (default $KUBECONFIG, else in-cluster or ~/.kube/config)")
	fl.StringVar(&f.namespace, "namespace", "stagehand", "namespace of the lock objects for --storage kubernetes")
	fl.StringVar(&f.table, "table", "", "the seed's DynamoDB table name: not supported, locks live in Kubernetes (--storage kubernetes or --server)")
}

// noDynamoDB says how to get along without the seed's DynamoDB backend:
// Stagehand keeps locks in Kubernetes objects (locks.stagehand.io).
const noDynamoDB = "DynamoDB lock storage is not supported: Stagehand keeps locks in Kubernetes; use --storage kubernetes, or --server URL of a reconciler"

// open is how unlock, check, prune and list start: the command's
// dependencies, the paths it names (arguments and --path; with allowNone,
// [""] for "every lock" when there are none) and the lock store.
func (f *backendFlags) open(cmd *cobra.Command, args, flagPaths []string, allowNone bool) (lockDeps, []string, lockBackend, error) {
	d, err := lockDepsFrom(cmd.Context())
	if err != nil {
		return d, nil, nil, err
	}
	ps, err := lockPaths(args, flagPaths, allowNone)
	if err != nil {
		return d, nil, nil, err
	}
	b, err := f.backend(cmd.Context(), d)
	if err != nil {
		return d, nil, nil, err
	}
	return d, ps, b, nil
}

// backend connects to the store the flags (or $STAGEHAND_SERVER) name.
func (f *backendFlags) backend(ctx context.Context, d lockDeps) (lockBackend, error) {
	server := f.server
	if server == "" && f.storage == "" {
		server, _ = d.lookup("STAGEHAND_SERVER")
	}
	switch {
	case f.table != "":
		return nil, command.Usagef("--table %q: %s", f.table, noDynamoDB)
	case f.storage == "dynamodb":
		return nil, command.Usagef("--storage dynamodb: %s", noDynamoDB)
	case server != "" && f.storage != "":
		return nil, command.Usagef("--server and --storage are mutually exclusive")
	case server != "":
		token, err := command.UserToken(context.Background(), d.lookup, command.TokenFlag{File: f.tokenFile, Flag: "--token-file", User: "--server"})
		if err != nil {
			return nil, err
		}
		c, err := api.NewClient(server, token)
		if err != nil {
			return nil, command.Usagef("--server: %v", err)
		}
		return c.Locks()
	case f.storage == "kubernetes":
		svc, err := f.service(ctx, d)
		if err != nil {
			return nil, err
		}
		return serviceBackend{svc}, nil
	case f.storage == "memory":
		return nil, command.Usagef("--storage memory keeps locks in one process only; use --server with a reconciler configured with locks.storage: memory")
	case f.storage != "":
		return nil, command.Usagef("invalid --storage %q: expected kubernetes (or use --server URL)", f.storage)
	}
	return nil, command.Usagef("no lock store: pass --server URL (or set $STAGEHAND_SERVER) or --storage kubernetes")
}

// service is the lock service over the Kubernetes objects in --namespace
// of the cluster of --kubeconfig (else $KUBECONFIG, else in-cluster or
// ~/.kube/config), built the way the reconciler builds its own, on the API
// server's clock: created, updated and expiry times (a --duration, and the
// check of an --until) never depend on this host's clock.
func (f *backendFlags) service(ctx context.Context, d lockDeps) (*lock.Service, error) {
	path := f.kubeconfig
	if path == "" {
		path, _ = d.lookup("KUBECONFIG")
	}
	cfg := &config.Config{Locks: config.Locks{Storage: "kubernetes", Namespace: f.namespace}, State: config.State{Kubeconfig: path}}
	b, err := wire.New(cfg)
	if err != nil {
		return nil, err
	}
	clients, err := b.Clients()
	if err != nil {
		return nil, err
	}
	rc, err := clients.RESTConfig(path, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	clock, err := lock.ServerClock(ctx, rc, d.now)
	if err != nil {
		return nil, err
	}
	return wire.LockService(clients, cfg, wire.WithClock(clock))
}

// lockFailure turns a refusal from the store into the seed's messages on
// stderr and exit code 1, a bad request into a usage error (exit 2), and
// passes other errors on (exit 1, printed by the main).
func lockFailure(cmd *cobra.Command, d lockDeps, err error) error {
	var (
		le *lock.LockedError
		te *lock.TypeError
		ie *lock.InvalidError
		ae *lockapi.APIError
	)
	w := cmd.ErrOrStderr()
	switch {
	case errors.As(err, &le):
		for _, l := range le.Locks {
			fmt.Fprintln(w, "Error:", l.BlockingMessage(d.loc))
		}
		return command.Exit(1, nil)
	case errors.As(err, &ie):
		return command.Usage(ie)
	case errors.As(err, &te):
		fmt.Fprintln(w, "Error:", te.Error())
		return command.Exit(1, nil)
	case errors.As(err, &ae) && ae.StatusCode == 409:
		fmt.Fprintln(w, "Error:", ae.Message)
		return command.Exit(1, nil)
	}
	return err
}
