package kube

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Default client rate limit: off. The reconciler bounds its requests in
// flight (workloads.concurrency) and the API server's priority and fairness
// protects it; a token bucket on top would only serialise a large deploy.
const (
	DefaultQPS   = -1
	DefaultBurst = 0
)

type options struct {
	wrap  transport.WrapperFunc
	qps   float32
	burst int
}

// Option configures Clients.
type Option func(*options)

// WithWrapTransport wraps every client's transport (to count requests, for example).
func WithWrapTransport(fn transport.WrapperFunc) Option {
	return func(o *options) { o.wrap = fn }
}

// WithRateLimit sets the client-side rate limit; qps < 0 disables it.
func WithRateLimit(qps float32, burst int) Option {
	return func(o *options) { o.qps, o.burst = qps, burst }
}

// Clients builds and caches clients by kubeconfig path and context.
type Clients struct {
	o  options
	mu sync.Mutex
	m  map[[2]string]kubernetes.Interface
}

// NewClients returns an empty client cache.
func NewClients(opts ...Option) *Clients {
	o := options{qps: DefaultQPS, burst: DefaultBurst}
	for _, opt := range opts {
		opt(&o)
	}
	return &Clients{o: o, m: map[[2]string]kubernetes.Interface{}}
}

// RESTConfig loads the client configuration for a kubeconfig path and
// context. An empty path means in-cluster when running in a pod, else the
// usual kubeconfig loading ($KUBECONFIG, then ~/.kube/config); an empty
// context means the file's current context.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" && context == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		} else if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("loading in-cluster config: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q (context %q): %w", kubeconfig, context, err)
	}
	return c, nil
}

// Client returns the (cached) client for a kubeconfig path and context.
func (c *Clients) Client(kubeconfig, context string) (kubernetes.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{kubeconfig, context}
	if cs, ok := c.m[k]; ok {
		return cs, nil
	}
	rc, err := RESTConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = c.o.qps, c.o.burst
	// Protobuf halves the CPU both sides spend on large lists and on patch
	// responses; every kind the reconciler touches is a built-in type.
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = "stagehand"
	if c.o.wrap != nil {
		rc.Wrap(c.o.wrap)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building client for kubeconfig %q (context %q): %w", kubeconfig, context, err)
	}
	c.m[k] = cs
	return cs, nil
}

// Targets returns the reconcile targets of an environment's configuration.
func (c *Clients) Targets(env config.Environment) ([]reconcile.Target, error) {
	out := make([]reconcile.Target, 0, len(env.Targets))
	for _, t := range env.Targets {
		cs, err := c.Client(t.Kubeconfig, t.Context)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		out = append(out, reconcile.Target{Name: t.Name, Namespace: t.Namespace, Client: cs})
	}
	return out, nil
}
