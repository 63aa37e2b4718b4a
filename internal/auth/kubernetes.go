package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KubernetesGroup is the API group the SubjectAccessReviews name. No such
// API is served: the resources exist only for RBAC rules, e.g.
//
//	rules:
//	- apiGroups: [stagehand.io]
//	  resources: [environments]
//	  resourceNames: [prod]
//	  verbs: [approve]
const KubernetesGroup = "stagehand.io"

// kubeUser is what TokenReview said about a token.
type kubeUser struct {
	uid    string
	groups []string
	extra  map[string]authzv1.ExtraValue
}

// kubeReviewer checks Kubernetes bearer tokens with TokenReview and
// authorises every scope with a SubjectAccessReview.
type kubeReviewer struct {
	client    kubernetes.Interface
	namespace string // of the SubjectAccessReviews: Roles there grant scopes
	audience  string // a token must be minted for (TokenReview's audiences)
	now       func() time.Time
	// throttle bounds the TokenReviews of tokens not cached.
	throttle *throttle

	mu    sync.Mutex
	cache map[[sha256.Size]byte]kubeCached
}

type kubeCached struct {
	p       Principal // Name "" when the token was refused
	expires time.Time
}

// looksJWT reports whether tok has the shape of a JSON Web Token, as
// ServiceAccount tokens (TokenRequest and legacy Secrets) do.
func looksJWT(tok string) bool {
	return strings.HasPrefix(tok, "eyJ") && strings.Count(tok, ".") == 2
}

// review returns the principal of tok, from TokenReview (cached like GET /user).
func (k *kubeReviewer) review(ctx context.Context, tok string) (Principal, error) {
	sum := sha256.Sum256([]byte(tok))
	now := k.now()
	k.mu.Lock()
	c, ok := k.cache[sum]
	k.mu.Unlock()
	if !ok || !now.Before(c.expires) {
		// A token the API server accepted before is reviewed again outside
		// the budget (a flood of made-up tokens must not lock it out).
		if !ok || c.p.Name == "" {
			if err := k.throttle.take(); err != nil {
				return Principal{}, err
			}
		}
		tr, err := k.client.AuthenticationV1().TokenReviews().Create(ctx,
			&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tok, Audiences: []string{k.audience}}}, metav1.CreateOptions{})
		if err != nil {
			return Principal{}, fmt.Errorf("reviewing a Kubernetes token: %w", err)
		}
		c = kubeCached{expires: now.Add(invalidTTL)}
		// The API server authenticates a token only for an audience it names (Status.Audiences, a subset
		// of ours): one minted for the API server alone is not for us.
		if tr.Status.Authenticated && tr.Status.User.Username != "" && slices.Contains(tr.Status.Audiences, k.audience) {
			u := tr.Status.User
			extra := map[string]authzv1.ExtraValue{}
			for key, v := range u.Extra {
				extra[key] = authzv1.ExtraValue(v)
			}
			c = kubeCached{expires: now.Add(userTTL), p: Principal{Name: u.Username, Kind: KindKubernetes,
				kube: &kubeUser{uid: u.UID, groups: u.Groups, extra: extra}}}
		}
		k.mu.Lock()
		if len(k.cache) >= maxCached {
			for key, v := range k.cache {
				if !now.Before(v.expires) {
					delete(k.cache, key)
				}
			}
		}
		if len(k.cache) >= maxCached {
			clear(k.cache)
		}
		k.cache[sum] = c
		k.mu.Unlock()
	}
	if c.p.Name == "" {
		return Principal{}, unauthenticated(fmt.Sprintf("the Kubernetes API server does not accept this token for the audience %s (TokenReview): it is wrong, expired, for another cluster, or minted without --audience %s", k.audience, k.audience))
	}
	return c.p, nil
}

// kubeAttributes maps a scope to what the SubjectAccessReview asks, in the
// reconciler's state namespace (so a Role and RoleBinding there, or a
// ClusterRole, grant it):
//
//	read            get     environments.stagehand.io
//	lock            create  locks.stagehand.io
//	lock:admin      delete  locks.stagehand.io
//	approve:<env>   approve environments.stagehand.io named <env>
func kubeAttributes(scope string) *authzv1.ResourceAttributes {
	a := &authzv1.ResourceAttributes{Group: KubernetesGroup}
	switch {
	case scope == ScopeRead:
		a.Verb, a.Resource = "get", "environments"
	case scope == ScopeLock:
		a.Verb, a.Resource = "create", "locks"
	case scope == ScopeLockAdmin:
		a.Verb, a.Resource = "delete", "locks"
	default:
		a.Verb, a.Resource, a.Name = "approve", "environments", strings.TrimPrefix(scope, ScopeApprove)
	}
	return a
}

// authorize asks the API server whether p may do what scope names.
func (k *kubeReviewer) authorize(ctx context.Context, p Principal, scope string) (bool, string, error) {
	a := kubeAttributes(scope)
	a.Namespace = k.namespace
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: p.Name, UID: p.kube.uid, Groups: p.kube.groups, Extra: p.kube.extra, ResourceAttributes: a,
	}}
	out, err := k.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("asking Kubernetes whether %s may %s: %w", p.Name, scope, err)
	}
	what := a.Resource + "." + a.Group
	if a.Name != "" {
		what += "/" + a.Name
	}
	if out.Status.Allowed {
		return true, fmt.Sprintf("RBAC allows %s %s", a.Verb, what), nil
	}
	return false, fmt.Sprintf("Kubernetes RBAC does not allow %s to %s %s (SubjectAccessReview)", p.Name, a.Verb, what), nil
}
