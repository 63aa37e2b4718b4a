package wire

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Clients builds Kubernetes clients and caches them by kubeconfig path and
// context, so every target (and the state and lock store) on the same
// cluster shares one client and its connections.
type Clients struct {
	o       options
	mu      sync.Mutex
	configs map[[2]string]*rest.Config
	clients map[[2]string]kubernetes.Interface
	// Target clients (targetclient.go) and the Secret watches behind them.
	targets   map[targetKey]kubernetes.Interface
	dynamics  map[targetKey]dynamic.Interface
	watches   map[[2]string]*secretWatch
	stop      chan struct{}
	closeOnce sync.Once
}

// NewClients returns an empty client cache. It reads WithRESTConfig,
// WithWrapTransport and WithRateLimit.
func NewClients(opts ...Option) (*Clients, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring Kubernetes clients: %w", err)
	}
	return newClients(o)
}

// newClients is NewClients with its options applied.
func newClients(o options) (*Clients, error) {
	return &Clients{o: o, configs: map[[2]string]*rest.Config{}, clients: map[[2]string]kubernetes.Interface{},
		targets: map[targetKey]kubernetes.Interface{}, dynamics: map[targetKey]dynamic.Interface{}, watches: map[[2]string]*secretWatch{}, stop: make(chan struct{})}, nil
}

// RESTConfig returns the client configuration for a kubeconfig path and
// context, with the shared settings (content type, rate limit, user agent)
// applied; the caller gets its own copy. An empty path means in-cluster when
// running in a pod, else the usual kubeconfig loading ($KUBECONFIG, then
// ~/.kube/config); an empty context means the file's current context.
func (c *Clients) RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc, err := c.restConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	return rest.CopyConfig(rc), nil
}

// Client returns the (cached) client for a kubeconfig path and context.
func (c *Clients) Client(kubeconfig, context string) (kubernetes.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{kubeconfig, context}
	if cs, ok := c.clients[k]; ok {
		return cs, nil
	}
	rc, err := c.restConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(rc))
	if err != nil {
		return nil, fmt.Errorf("building client for kubeconfig %q (context %q): %w", kubeconfig, context, err)
	}
	c.clients[k] = cs
	return cs, nil
}

// restConfig loads (once) and returns the cached configuration; c.mu is held.
func (c *Clients) restConfig(kubeconfig, context string) (*rest.Config, error) {
	k := [2]string{kubeconfig, context}
	if rc, ok := c.configs[k]; ok {
		return rc, nil
	}
	rc := c.o.restConfig
	if rc != nil {
		rc = rest.CopyConfig(rc)
	} else {
		var err error
		if rc, err = loadRESTConfig(kubeconfig, context); err != nil {
			return nil, err
		}
	}
	rc.QPS, rc.Burst = c.o.qps, c.o.burst
	rc.ContentType = ContentType
	rc.AcceptContentTypes = AcceptContentTypes
	rc.UserAgent = UserAgent
	if c.o.wrap != nil {
		rc.Wrap(c.o.wrap)
	}
	c.configs[k] = rc
	return rc, nil
}

// loadRESTConfig reads a kubeconfig (see Clients.RESTConfig).
func loadRESTConfig(kubeconfig, context string) (*rest.Config, error) {
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
