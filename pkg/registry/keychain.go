package registry

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauthn "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"k8s.io/client-go/kubernetes"
)

// PullContext is whose credentials pull a workload's images: the pod
// template's namespace, ServiceAccount and imagePullSecrets, in the target
// cluster the workload runs in.
type PullContext struct {
	Target           string
	Client           kubernetes.Interface // the target's
	Namespace        string
	ServiceAccount   string // "" is the namespace's "default", as for a pod
	ImagePullSecrets []string
}

// Keychains returns the registry credentials for one workload's images.
type Keychains func(ctx context.Context, pc PullContext) (authn.Keychain, error)

// ClusterKeychains returns, for each workload, the credentials its cluster
// would pull with: the pod's own imagePullSecrets and those of its
// ServiceAccount, read through the target's client (go-containerregistry's
// Kubernetes keychain), then the fallback keychains in order. A missing
// ServiceAccount or Secret is skipped, as the kubelet does; any other error
// reading them (a 403 for want of RBAC) is the workload's problem.
func ClusterKeychains(fallback ...authn.Keychain) Keychains {
	return func(ctx context.Context, pc PullContext) (authn.Keychain, error) {
		k, err := k8sauthn.New(ctx, pc.Client, k8sauthn.Options{
			Namespace: pc.Namespace, ServiceAccountName: pc.ServiceAccount, ImagePullSecrets: pc.ImagePullSecrets,
		})
		if err != nil {
			sa := pc.ServiceAccount
			if sa == "" {
				sa = "default"
			}
			return nil, fmt.Errorf("reading image pull secrets of serviceaccount %s/%s in target %s: %w", pc.Namespace, sa, pc.Target, err)
		}
		return authn.NewMultiKeychain(append([]authn.Keychain{k}, fallback...)...), nil
	}
}

// Pull identifies a PullContext (PullContext.Key); workloads with equal
// keys share a keychain within one plan. The zero Pull is the static
// keychain's, when credentials are not per workload.
type Pull struct{ target, namespace, serviceAccount, secrets string }

// Key is pc's key: pull contexts with equal keys share a keychain within
// one Session.
func (pc PullContext) Key() Pull {
	return Pull{pc.Target, pc.Namespace, pc.ServiceAccount, strings.Join(pc.ImagePullSecrets, ",")}
}

// Session is one plan's resolution: it builds each pull context's keychain
// once, or takes it from the Resolver's cache (see store.keychain).
type Session struct {
	r     *Resolver
	pulls map[Pull]PullContext
	mu    sync.Mutex
	built map[Pull]*builtKeychain
}

// Session begins a plan's resolution.
func (r *Resolver) Session() *Session {
	return &Session{r: r, pulls: map[Pull]PullContext{}, built: map[Pull]*builtKeychain{}}
}

// Add says whose credentials resolve the keys of pull: pc, of which pull is
// the key (or the zero Pull for the static keychain).
func (s *Session) Add(pull Pull, pc PullContext) { s.pulls[pull] = pc }

type builtKeychain struct {
	once sync.Once
	kc   authn.Keychain
	err  error
}

func (s *Session) get(ctx context.Context, k Pull) (authn.Keychain, error) {
	if s.r.cfg.Keychains == nil {
		return s.r.cfg.Keychain, nil
	}
	s.mu.Lock()
	b, ok := s.built[k]
	if !ok {
		b = &builtKeychain{}
		s.built[k] = b
	}
	s.mu.Unlock()
	b.once.Do(func() {
		pc := s.pulls[k]
		ck := keychainKey{client: pc.Client, pull: k}
		if kc, ok := s.r.store.keychain(ck); ok {
			b.kc = kc
			return
		}
		if b.kc, b.err = s.r.cfg.Keychains(ctx, pc); b.err == nil {
			s.r.store.rememberKeychain(ck, b.kc)
		}
	})
	return b.kc, b.err
}

// key is the registry state's key of k's keychain: the zero key for the
// static keychain every pull context shares.
func (s *Session) key(k Pull) keychainKey {
	if s.r.cfg.Keychains == nil {
		return keychainKey{}
	}
	return keychainKey{client: s.pulls[k].Client, pull: k}
}

// forget drops k's cached keychain, after a registry refused what it sent:
// the next plan reads the pull secrets again.
func (s *Session) forget(k Pull) {
	s.r.store.forgetKeychain(s.key(k))
}
