package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauthn "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
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

// pullKey identifies a PullContext; workloads with equal keys share a
// keychain within one plan.
type pullKey struct{ target, namespace, serviceAccount, secrets string }

// pullOf returns the pull context of w in t; the zero key when credentials
// are not per workload.
func (r *Reconciler) pullOf(t Target, w *workload.Workload) (pullKey, PullContext) {
	if r.o.registry.keychains == nil {
		return pullKey{}, PullContext{}
	}
	pc := PullContext{Target: t.Name, Client: t.Client, Namespace: w.Namespace, ServiceAccount: w.ServiceAccount}
	for _, s := range w.PullSecrets {
		if s.Name != "" && !slices.Contains(pc.ImagePullSecrets, s.Name) {
			pc.ImagePullSecrets = append(pc.ImagePullSecrets, s.Name)
		}
	}
	return pullKey{t.Name, pc.Namespace, pc.ServiceAccount, strings.Join(pc.ImagePullSecrets, ",")}, pc
}

// keychainSet builds each pull context's keychain once per plan, or takes
// it from the registry state's cache (see registryState.keychain).
type keychainSet struct {
	static    authn.Keychain
	keychains Keychains
	state     *registryState
	pulls     map[pullKey]PullContext
	mu        sync.Mutex
	built     map[pullKey]*builtKeychain
}

type builtKeychain struct {
	once sync.Once
	kc   authn.Keychain
	err  error
}

func (s *keychainSet) get(ctx context.Context, k pullKey) (authn.Keychain, error) {
	if s.keychains == nil {
		return s.static, nil
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
		if kc, ok := s.state.keychain(ck); ok {
			b.kc = kc
			return
		}
		if b.kc, b.err = s.keychains(ctx, pc); b.err == nil {
			s.state.rememberKeychain(ck, b.kc)
		}
	})
	return b.kc, b.err
}

// key is the registry state's key of k's keychain: the zero key for the
// static keychain every pull context shares.
func (s *keychainSet) key(k pullKey) keychainKey {
	if s.keychains == nil {
		return keychainKey{}
	}
	return keychainKey{client: s.pulls[k].Client, pull: k}
}

// forget drops k's cached keychain, after a registry refused what it sent:
// the next plan reads the pull secrets again.
func (s *keychainSet) forget(k pullKey) {
	s.state.forgetKeychain(s.key(k))
}
