package wire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// targetKey identifies a target client: targets that reach the same cluster
// the same way with the same timeout share one.
type targetKey struct {
	kubeconfig, context         string
	secretKind, secretName, key string
	timeout                     time.Duration
}

// targetKeyOf is the cache key of target t's clients.
func targetKeyOf(t config.Target) targetKey {
	k := targetKey{kubeconfig: t.Kubeconfig, context: t.Context, timeout: t.Timeout.Duration}
	switch {
	case t.KubeconfigSecret != nil:
		k.secretKind, k.secretName, k.key = "kubeconfigSecret", t.KubeconfigSecret.Name, t.KubeconfigSecret.Key
	case t.ClusterSecret != "":
		k.secretKind, k.secretName = "clusterSecret", t.ClusterSecret
	}
	return k
}

// targetClient returns the (cached) client of target t of cfg: from its
// kubeconfig file, or from the Secret it names in state.namespace of the
// state cluster, with its per-request timeout. field names t in errors.
func (c *Clients) targetClient(cfg *config.Config, t config.Target, field string) (kubernetes.Interface, error) {
	k := targetKeyOf(t)
	if k.secretKind == "" && k.timeout == 0 {
		return c.Client(t.Kubeconfig, t.Context)
	}
	c.mu.Lock()
	cs, ok := c.targets[k]
	c.mu.Unlock()
	if ok {
		return cs, nil
	}
	rc, err := c.targetConfig(cfg, t, field, k)
	if err != nil {
		return nil, err
	}
	cs, err = kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.targets[k]; ok { // built concurrently
		return old, nil
	}
	c.targets[k] = cs
	return cs, nil
}

// targetDynamic returns the (cached) dynamic client of target t of cfg,
// which reaches the cluster as its targetClient does: the workload kinds
// served by a CRD (Argo Rollouts' Rollouts) are read through it, in JSON.
func (c *Clients) targetDynamic(cfg *config.Config, t config.Target, field string) (dynamic.Interface, error) {
	k := targetKeyOf(t)
	c.mu.Lock()
	d, ok := c.dynamics[k]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	var rc *rest.Config
	var err error
	if k.secretKind == "" && k.timeout == 0 {
		rc, err = c.RESTConfig(t.Kubeconfig, t.Context)
	} else {
		rc, err = c.targetConfig(cfg, t, field, k)
	}
	if err != nil {
		return nil, err
	}
	if d, err = dynamic.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.dynamics[k]; ok { // built concurrently
		return old, nil
	}
	c.dynamics[k] = d
	return d, nil
}

// targetConfig is the client configuration of target t, whose cache key is
// k: from the Secret k names, or from its kubeconfig, with its timeout.
func (c *Clients) targetConfig(cfg *config.Config, t config.Target, field string, k targetKey) (*rest.Config, error) {
	var rc *rest.Config
	if k.secretKind != "" {
		state, err := c.Client(cfg.State.Kubeconfig, cfg.State.Context)
		if err != nil {
			return nil, fmt.Errorf("state cluster, to read %s: %w", k.secretKind, err)
		}
		rc = &rest.Config{Host: placeholderHost, Transport: &secretCluster{
			field: field + "." + k.secretKind, key: k.key, context: t.Context,
			watch: c.secretWatch(state, cfg.State.Namespace, k.secretName),
		}}
		rc.QPS, rc.Burst = c.o.qps, c.o.burst
		rc.ContentType, rc.AcceptContentTypes, rc.UserAgent = ContentType, AcceptContentTypes, UserAgent
		if c.o.wrap != nil {
			rc.Wrap(c.o.wrap)
		}
	} else {
		var err error
		if rc, err = c.RESTConfig(t.Kubeconfig, t.Context); err != nil {
			return nil, err
		}
	}
	if k.timeout > 0 {
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return timeoutTransport{base: rt, timeout: k.timeout} })
	}
	return rc, nil
}

// secretWatch returns the one watch of Secret namespace/name.
func (c *Clients) secretWatch(client kubernetes.Interface, namespace, name string) *secretWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{namespace, name}
	if w, ok := c.watches[k]; ok {
		return w
	}
	w := &secretWatch{client: client, namespace: namespace, name: name, stop: c.stop}
	c.watches[k] = w
	return w
}

// Close stops the watches of the Secrets that describe target clusters.
func (c *Clients) Close() {
	c.closeOnce.Do(func() { close(c.stop) })
}

// timeoutTransport bounds each request but watches, until its response
// body is read or closed, so one slow cluster cannot hold a pass.
type timeoutTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (t timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		return t.base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeoutCause(req.Context(), t.timeout,
		fmt.Errorf("no answer from %s within the target's timeout of %s", req.URL.Host, t.timeout))
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
