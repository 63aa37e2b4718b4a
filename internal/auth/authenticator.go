package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Error is a refusal: Status is 401 (who you are is not known) or 403 (you
// may not), and Message says why in words a caller can act on.
type Error struct {
	Status  int
	Message string
	// RetryAfter is when to try again, for a 429 (too many tokens to verify).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

func unauthenticated(msg string) error { return &Error{Status: http.StatusUnauthorized, Message: msg} }

// Authenticator verifies bearer tokens and authorises scopes.
type Authenticator struct {
	o      options
	file   *tokenFile // nil without a tokens file
	static []namedToken
	legacy [sha256.Size]byte // zero without a legacy token
	gh     *gitHubUsers      // nil without GitHub
	kube   *kubeReviewer     // nil unless enabled
}

// Option configures New.
type Option func(*options) error

type options struct {
	tokensFile    string
	tokens        []Token
	legacy        string
	legacyFile    string
	githubURL     string
	githubClient  *http.Client
	policy        ApproverPolicy
	readPolicy    ReadPolicy // readlock.go
	lockRule      LockRule
	environments  []string // where approving lets a caller lock (LockApprovers)
	kube          kubernetes.Interface
	kubeNamespace string
	kubeAudience  string
	kubeActsFor   map[string]identity.ID // Kubernetes user name → the person it acts for
	reload        time.Duration
	log           logr.Logger
	now           func() time.Time
	verifyRate    float64
	verifyBurst   int
	breakGlass    func(env string) []string // breakglass.go
}

// WithTokensFile reads named tokens from path (server.tokensFile, a mounted
// Secret): a YAML list of {name, token | sha256, scopes}. The file is
// re-read when it changes, so rotating a token needs no restart.
func WithTokensFile(path string) Option {
	return func(o *options) error { o.tokensFile = path; return nil }
}

// WithTokens adds named tokens (fixed for the process' life).
func WithTokens(ts ...Token) Option {
	return func(o *options) error { o.tokens = append(o.tokens, ts...); return nil }
}

// WithLegacyToken accepts token as the deprecated single API token: a
// principal named LegacyName with read and lock, who cannot approve.
func WithLegacyToken(token string) Option {
	return func(o *options) error { o.legacy = token; return nil }
}

// WithLegacyTokenFile reads the legacy token from path (server.apiTokenFile; "" for none).
func WithLegacyTokenFile(path string) Option {
	return func(o *options) error { o.legacyFile = path; return nil }
}

// WithGitHub accepts GitHub user tokens, learning their login with GET
// /user on apiURL (github.apiURL) through client (nil: a client with a
// ten-second timeout). Approving needs WithApproverPolicy too.
func WithGitHub(apiURL string, client *http.Client) Option {
	return func(o *options) error {
		if apiURL == "" {
			return errors.New("WithGitHub: the API URL is required (github.apiURL)")
		}
		o.githubURL, o.githubClient = apiURL, client
		return nil
	}
}

// WithApproverPolicy decides whether a GitHub login may approve in an environment.
func WithApproverPolicy(p ApproverPolicy) Option {
	return func(o *options) error { o.policy = p; return nil }
}

// WithKubernetes accepts Kubernetes bearer tokens, checked with TokenReview
// on c's API server and authorised with SubjectAccessReviews in namespace
// (server.kubernetesAuth; the state namespace).
func WithKubernetes(c kubernetes.Interface, namespace string) Option {
	return func(o *options) error {
		if c == nil || namespace == "" {
			return errors.New("WithKubernetes: want a client and a namespace")
		}
		o.kube, o.kubeNamespace = c, namespace
		return nil
	}
}

// WithKubernetesAudience sets the audience a Kubernetes token must be minted for (TokenReview's audiences;
// default DefaultKubernetesAudience, server.kubernetesAudience): a token for the API server alone, which
// would also work against the cluster, is refused.
func WithKubernetesAudience(audience string) Option {
	return func(o *options) error {
		if audience == "" {
			return errors.New("WithKubernetesAudience: want an audience")
		}
		o.kubeAudience = audience
		return nil
	}
}

// WithKubernetesActsFor names the person each listed Kubernetes user acts for (server.kubernetesActsFor:
// user name as TokenReview returns it → github:<login>): that user is then the person for every approval
// rule (counted once with the person's other credentials, teams and minPermission, four-eyes), on top of
// what RBAC lets it do. A user not listed is automation.
func WithKubernetesActsFor(m map[string]string) Option {
	return func(o *options) error {
		out := make(map[string]identity.ID, len(m))
		for user, person := range m {
			id, err := identity.ParseTyped(person)
			switch {
			case user == "":
				return errors.New("WithKubernetesActsFor: an empty user name")
			case err != nil || id.Kind != identity.GitHub:
				return fmt.Errorf("WithKubernetesActsFor: %s acts for %q: want the person as github:<login>", user, person)
			case identity.Reserved(id.Name):
				return fmt.Errorf("WithKubernetesActsFor: %s acts for %q, which is reserved: %s", user, person, ReservedRule)
			}
			out[user] = id
		}
		o.kubeActsFor = out
		return nil
	}
}

// DefaultKubernetesAudience is the audience Kubernetes tokens must name unless WithKubernetesAudience says
// another: `kubectl create token <serviceaccount> --audience stagehand`.
const DefaultKubernetesAudience = "stagehand"

// WithReloadInterval sets how often the tokens file is looked at for
// changes (default one second; 0 looks on every request).
func WithReloadInterval(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("WithReloadInterval(%s): want zero or more", d)
		}
		o.reload = d
		return nil
	}
}

// WithLog receives the deprecation warning of the legacy token and the
// tokens file's re-read errors. Without it, nothing is logged.
func WithLog(l logr.Logger) Option {
	return func(o *options) error { o.log = l; return nil }
}

// WithClock sets the clock of the GET /user and TokenReview caches (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("WithClock: nil clock")
		}
		o.now = now
		return nil
	}
}

// New returns an Authenticator. Without any source of principals, every
// request is refused with 401; Enabled reports whether there is one.
func New(opts ...Option) (*Authenticator, error) {
	o := options{reload: time.Second, log: logr.Discard(), now: time.Now, verifyRate: DefaultVerifyRate, verifyBurst: DefaultVerifyBurst}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring authentication: %w", err)
		}
	}
	a := &Authenticator{o: o}
	if o.legacyFile != "" {
		b, err := os.ReadFile(o.legacyFile)
		if err != nil {
			return nil, fmt.Errorf("configuring authentication: server.apiTokenFile: %w", err)
		}
		if o.legacy = strings.TrimSpace(string(b)); o.legacy == "" {
			return nil, fmt.Errorf("configuring authentication: server.apiTokenFile %s is empty", o.legacyFile)
		}
	}
	if o.legacy != "" {
		if strings.ContainsFunc(o.legacy, unicode.IsSpace) {
			return nil, errors.New("configuring authentication: the API token contains white space: want one line without spaces (server.apiTokenFile)")
		}
		a.legacy = sha256.Sum256([]byte(o.legacy))
		o.log.Info("server.apiTokenFile is deprecated: its token may read and lock but no longer approve or reject; give each caller a named token in server.tokensFile")
	}
	static, err := compile(o.tokens)
	if err != nil {
		return nil, fmt.Errorf("configuring authentication: tokens: %w", err)
	}
	a.static = static
	if o.tokensFile != "" {
		a.file = &tokenFile{path: o.tokensFile, every: o.reload,
			warn: func(err error) { o.log.Error(err, "tokens file not reloaded") }}
		if err := a.file.load(); err != nil {
			return nil, fmt.Errorf("configuring authentication: %w", err)
		}
	}
	remote := newThrottle(o.verifyRate, o.verifyBurst, o.now)
	if o.githubURL != "" {
		c := o.githubClient
		if c == nil {
			c = &http.Client{Timeout: 10 * time.Second}
		}
		a.gh = &gitHubUsers{apiURL: o.githubURL, client: c, now: o.now, throttle: remote, cache: map[[sha256.Size]byte]cached{}}
	}
	if o.kube != nil {
		aud := o.kubeAudience
		if aud == "" {
			aud = DefaultKubernetesAudience
		}
		a.kube = &kubeReviewer{client: o.kube, namespace: o.kubeNamespace, audience: aud, now: o.now, throttle: remote, cache: map[[sha256.Size]byte]kubeCached{}}
	}
	return a, nil
}

// Enabled reports whether any principal can be verified at all.
func (a *Authenticator) Enabled() bool {
	return a.file != nil || len(a.static) > 0 || a.legacy != [sha256.Size]byte{} || a.gh != nil || a.kube != nil
}

// BearerToken returns the token of an "Authorization: Bearer ..." header, or "".
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// Authenticate returns who tok belongs to. A refusal is an *Error with
// status 401 (or 429 when too many new tokens are being verified); any other error is the failure of a service asked (GitHub,
// the Kubernetes API server) and deserves a 503.
func (a *Authenticator) Authenticate(ctx context.Context, tok string) (Principal, error) {
	if tok == "" {
		return Principal{}, unauthenticated("missing bearer token: send Authorization: Bearer <token>")
	}
	sum := sha256.Sum256([]byte(tok))
	named := a.static
	if a.file != nil {
		named = append(a.file.current(), a.static...)
	}
	if t, ok := match(named, sum); ok {
		return Principal{Name: t.name, Kind: KindToken, Scopes: t.scopes, ActsFor: t.actsFor}, nil
	}
	if a.legacy != [sha256.Size]byte{} && subtle.ConstantTimeCompare(a.legacy[:], sum[:]) == 1 {
		return Principal{Name: LegacyName, Kind: KindToken, Scopes: []string{ScopeRead, ScopeLock}, legacy: true}, nil
	}
	switch {
	case looksGitHub(tok) && a.gh == nil:
		return Principal{}, unauthenticated("GitHub user tokens are not accepted: this reconciler has no GitHub configured (github.owner and github.repo)")
	case looksGitHub(tok):
		login, err := a.gh.login(ctx, tok)
		if err != nil {
			return Principal{}, err
		}
		// No scopes: reading and locking are decided by Authorize (ReadPolicy, LockRule).
		p := Principal{Name: login, Kind: KindGitHub}
		if err := refuseReserved(p); err != nil {
			return Principal{}, err
		}
		return p, nil
	case looksJWT(tok) && a.kube != nil:
		p, err := a.kube.review(ctx, tok)
		if err != nil {
			return Principal{}, err
		}
		if err := refuseReserved(p); err != nil {
			return Principal{}, err
		}
		p.ActsFor = a.o.kubeActsFor[p.Name] // zero when the user acts for nobody
		return p, nil
	}
	return Principal{}, unauthenticated("unknown bearer token")
}

// Authorize decides whether p may use scope. It answers whether, why (in
// words for the caller when it is no), and an error only when a service
// it asked failed.
func (a *Authenticator) Authorize(ctx context.Context, p Principal, scope string) (bool, string, error) {
	switch scope {
	case ScopeRead:
		return a.authorizeRead(ctx, p)
	case ScopeLock:
		return a.authorizeLock(ctx, p)
	}
	if env, ok := strings.CutPrefix(scope, ScopeBreakGlass); ok {
		return a.authorizeBreakGlass(ctx, p, env)
	}
	if !strings.HasPrefix(scope, ScopeApprove) {
		return a.authorizeScope(ctx, p, scope)
	}
	ok, why, err := a.authorizeScope(ctx, p, scope)
	if err != nil || !ok || p.ActsFor.IsZero() {
		return ok, why, err
	}
	return a.authorizePerson(ctx, p, strings.TrimPrefix(scope, ScopeApprove))
}

// authorizePerson decides whether the person p acts for may approve in env, after p's own credential was
// allowed to (its scopes, RBAC): the GitHub approver policy (teams, minPermission) asked for the person's
// login, so that a token acting for github:alice approves only where alice's login would be allowed.
func (a *Authenticator) authorizePerson(ctx context.Context, p Principal, env string) (bool, string, error) {
	person := p.ActsFor
	if person.Kind != identity.GitHub {
		return false, fmt.Sprintf("%s acts for %s, and only a GitHub login can be a person here", p.ID(), person), nil
	}
	if a.o.policy == nil {
		return false, fmt.Sprintf("%s acts for %s, and approving as a GitHub login needs the GitHub approver policy, and this reconciler has none", p.ID(), person), nil
	}
	ok, why, err := a.o.policy.MayApprove(ctx, env, person.Name)
	if err != nil {
		return false, "", fmt.Errorf("checking whether %s, for whom %s acts, may approve in %s: %w", person, p.ID(), env, err)
	}
	if !ok {
		why = fmt.Sprintf("%s acts for %s, who may not approve in %s: %s", p.ID(), person, env, why)
	}
	return ok, why, nil
}

// authorizeScope decides scope by p's own credential: a token's scopes, Kubernetes RBAC, the GitHub
// approver policy for a GitHub login.
func (a *Authenticator) authorizeScope(ctx context.Context, p Principal, scope string) (bool, string, error) {
	approve := strings.HasPrefix(scope, ScopeApprove)
	switch {
	case p.Kind == KindKubernetes && a.kube != nil && p.kube != nil:
		return a.kube.authorize(ctx, p, scope)
	case granted(p.Scopes, scope):
		return true, "", nil
	case p.legacy && approve:
		return false, "the legacy server.apiTokenFile token can no longer approve or reject: use a named token with " +
			scope + " from server.tokensFile, or your GitHub login", nil
	case p.Kind == KindGitHub && approve:
		if a.o.policy == nil {
			return false, "approving with a GitHub login needs the GitHub approver policy, and this reconciler has none", nil
		}
		env := strings.TrimPrefix(scope, ScopeApprove)
		ok, why, err := a.o.policy.MayApprove(ctx, env, p.Name)
		if err != nil {
			return false, "", fmt.Errorf("checking whether %s may approve in %s: %w", p.Name, env, err)
		}
		return ok, why, nil
	}
	return false, fmt.Sprintf("%s lacks scope %s", p, scope), nil
}
