package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// secretCluster is a target cluster described by a Secret in the
// reconciler's namespace: a kubeconfig (kubeconfigSecret) or Argo CD's
// cluster Secret format (clusterSecret). It is the http.RoundTripper of the
// target's client: each request goes to the server, with the credentials,
// of the Secret's current version, so a rotated Secret is used from the next
// request on, without a restart. A new version rebuilds the transport.
type secretCluster struct {
	field   string // the configuration key, for errors
	watch   *secretWatch
	key     string // kubeconfig key; "" for Argo CD's format
	context string // kubeconfig context

	mu      sync.Mutex
	version string // resourceVersion the transport was built from
	rt      http.RoundTripper
	server  *url.URL
}

// placeholderHost is the host of a secret cluster's client; every request
// is sent to the Secret's server instead.
const placeholderHost = "https://secret-cluster.stagehand.invalid"

func (s *secretCluster) RoundTrip(req *http.Request) (*http.Response, error) {
	rt, server, err := s.current(req.Context())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.field, err)
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = server.Scheme, server.Host
	out.URL.Path = strings.TrimSuffix(server.Path, "/") + req.URL.Path
	if req.URL.RawPath != "" {
		out.URL.RawPath = strings.TrimSuffix(server.Path, "/") + req.URL.RawPath
	}
	out.Host = ""
	return rt.RoundTrip(out)
}

// current returns the transport and server of the Secret's current version,
// building them when the version changed.
func (s *secretCluster) current(ctx context.Context) (http.RoundTripper, *url.URL, error) {
	sec, err := s.watch.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rt != nil && s.version == sec.ResourceVersion {
		return s.rt, s.server, nil
	}
	rc, err := s.restConfig(sec)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %s/%s: building transport: %w", sec.Namespace, sec.Name, err)
	}
	server, err := url.Parse(rc.Host)
	if err != nil || server.Host == "" || (server.Scheme != "https" && server.Scheme != "http") {
		return nil, nil, fmt.Errorf("secret %s/%s: server %q is not an http(s) URL", sec.Namespace, sec.Name, rc.Host)
	}
	if old, ok := s.rt.(interface{ CloseIdleConnections() }); ok {
		old.CloseIdleConnections()
	}
	s.rt, s.server, s.version = rt, server, sec.ResourceVersion
	return rt, server, nil
}

// restConfig reads the Secret as a kubeconfig or as an Argo CD cluster.
func (s *secretCluster) restConfig(sec *corev1.Secret) (*rest.Config, error) {
	if s.key != "" {
		b, ok := sec.Data[s.key]
		if !ok {
			return nil, fmt.Errorf("no key %q", s.key)
		}
		cfg, err := clientcmd.Load(b)
		if err != nil {
			return nil, fmt.Errorf("key %q: parsing kubeconfig: %w", s.key, err)
		}
		for name, ai := range cfg.AuthInfos {
			if ai.Exec != nil || ai.AuthProvider != nil {
				return nil, fmt.Errorf("key %q: user %q needs an exec or auth-provider plugin, which the reconciler does not run; use a token or client certificate", s.key, name)
			}
		}
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, s.context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", s.key, err)
		}
		return rc, nil
	}
	return argoRESTConfig(sec)
}

// argoCluster is the "config" key of an Argo CD cluster Secret.
type argoCluster struct {
	BearerToken     string `json:"bearerToken"`
	Username        string `json:"username"`
	Password        string `json:"password"`
	TLSClientConfig struct {
		Insecure   bool   `json:"insecure"`
		ServerName string `json:"serverName"`
		CAData     []byte `json:"caData"`
		CertData   []byte `json:"certData"`
		KeyData    []byte `json:"keyData"`
	} `json:"tlsClientConfig"`
	AWSAuthConfig      json.RawMessage `json:"awsAuthConfig"`
	ExecProviderConfig json.RawMessage `json:"execProviderConfig"`
}

// argoRESTConfig reads Argo CD's declarative cluster Secret: "server", and
// "config" JSON with bearerToken (or username and password, or client
// certificate) and tlsClientConfig.
func argoRESTConfig(sec *corev1.Secret) (*rest.Config, error) {
	server := strings.TrimSpace(string(sec.Data["server"]))
	if server == "" {
		return nil, errors.New(`no key "server" (Argo CD cluster Secret format: server, config)`)
	}
	raw, ok := sec.Data["config"]
	if !ok {
		return nil, errors.New(`no key "config" (Argo CD cluster Secret format: server, config)`)
	}
	var c argoCluster
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf(`key "config": %w`, err)
	}
	if len(c.AWSAuthConfig) > 0 || len(c.ExecProviderConfig) > 0 {
		return nil, errors.New(`key "config": awsAuthConfig and execProviderConfig need plugins the reconciler does not run; use bearerToken`)
	}
	rc := &rest.Config{
		Host:        server,
		BearerToken: c.BearerToken,
		Username:    c.Username,
		Password:    c.Password,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: c.TLSClientConfig.Insecure, ServerName: c.TLSClientConfig.ServerName,
			CAData: c.TLSClientConfig.CAData, CertData: c.TLSClientConfig.CertData, KeyData: c.TLSClientConfig.KeyData,
		},
	}
	if rc.Insecure && len(rc.CAData) > 0 {
		rc.CAData = nil // client-go refuses both; insecure wins, as in Argo CD
	}
	return rc, nil
}

// secretWatch keeps the current version of one Secret from a watch, started
// on first use and stopped by Clients.Close.
type secretWatch struct {
	client          kubernetes.Interface
	namespace, name string
	stop            <-chan struct{}

	once   sync.Once
	store  cache.Store
	synced cache.InformerSynced
}

func (w *secretWatch) start() {
	lw := cache.NewListWatchFromClient(w.client.CoreV1().RESTClient(), "secrets", w.namespace,
		fields.OneTermEqualSelector("metadata.name", w.name))
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Secret{}, Handler: cache.ResourceEventHandlerFuncs{},
	})
	w.store, w.synced = store, ctrl.HasSynced
	go ctrl.Run(w.stop)
}

// get returns the Secret as last seen by the watch.
func (w *secretWatch) get(ctx context.Context) (*corev1.Secret, error) {
	w.once.Do(w.start)
	if !w.synced() && !cache.WaitForCacheSync(ctx.Done(), w.synced) {
		return nil, fmt.Errorf("reading secret %s/%s: %w", w.namespace, w.name, context.Cause(ctx))
	}
	obj, ok, err := w.store.GetByKey(w.namespace + "/" + w.name)
	if err != nil {
		return nil, fmt.Errorf("reading secret %s/%s: %w", w.namespace, w.name, err)
	}
	if !ok {
		return nil, fmt.Errorf("secret %s/%s not found", w.namespace, w.name)
	}
	return obj.(*corev1.Secret), nil
}
