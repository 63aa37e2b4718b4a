package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Kind says where a Principal's identity was verified.
type Kind string

// The kinds of principal.
const (
	// KindToken is a named token from server.tokensFile (or the legacy
	// server.apiTokenFile, named LegacyName).
	KindToken Kind = "token"
	// KindGitHub is a GitHub user token; the name is the login.
	KindGitHub Kind = "github"
	// KindKubernetes is a Kubernetes bearer token; the name is the user
	// TokenReview returned (system:serviceaccount:ns:name for a ServiceAccount).
	KindKubernetes Kind = "kubernetes"
)

// The scopes a route may need. ScopeApprove is a prefix: approve:<env>
// (see ApproveScope), and approve:* grants every environment.
const (
	ScopeRead      = "read"
	ScopeLock      = "lock"
	ScopeLockAdmin = "lock:admin"
	ScopeApprove   = "approve:"
)

// ApproveScope is the scope that approving or rejecting in env needs.
func ApproveScope(env string) string { return ScopeApprove + env }

// ReservedRule says why a name Stagehand uses for itself is refused, for every kind of credential.
const ReservedRule = identity.ReservedRule

// refuseReserved refuses a verified principal whose name is one Stagehand uses for itself: 403, naming the
// rule, so that nothing it does could be read as Stagehand's own.
func refuseReserved(p Principal) error {
	if !identity.Reserved(p.Name) {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Message: fmt.Sprintf("%s is refused: %s", p.ID(), ReservedRule)}
}

// Principal is a verified caller.
type Principal struct {
	// Name is what history and locks record: a token's name, a GitHub
	// login, or a Kubernetes user name.
	Name string
	Kind Kind
	// Scopes are the scopes granted outright. A GitHub principal's
	// approvals and every scope of a Kubernetes principal are decided per
	// request by Authorize instead.
	Scopes []string
	// ActsFor is the person a named token or a Kubernetes user acts for (a token's actsFor in
	// server.tokensFile, server.kubernetesActsFor); zero when it acts for nobody (automation).
	ActsFor identity.ID

	legacy bool      // the server.apiTokenFile token
	kube   *kubeUser // set for KindKubernetes
}

// ID is p's typed identity: github:alice, token:ci-deployer, kubernetes:system:serviceaccount:ns:sa.
func (p Principal) ID() identity.ID { return identity.ID{Kind: identity.Kind(p.Kind), Name: p.Name} }

// Identity is p as every rule sees it: its typed ID and the person it acts for.
func (p Principal) Identity() identity.Principal {
	return identity.Principal{ID: p.ID(), ActsFor: p.ActsFor}
}

// Legacy reports whether p is the deprecated server.apiTokenFile token.
func (p Principal) Legacy() bool { return p.legacy }

// String names p with its kind, e.g. "alice (github)".
func (p Principal) String() string { return p.Name + " (" + string(p.Kind) + ")" }

// granted reports whether the static scopes grant scope: every scope grants
// read, lock:admin grants lock, approve:* grants every approve:<env>.
func granted(scopes []string, scope string) bool {
	for _, s := range scopes {
		switch {
		case s == scope:
			return true
		case scope == ScopeRead:
			return true // any scope at all lets its holder read
		case scope == ScopeLock && s == ScopeLockAdmin:
			return true
		case s == ScopeApprove+"*" && strings.HasPrefix(scope, ScopeApprove):
			return true
		}
	}
	return false
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal in ctx, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
