package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Reading and locking are policy too: a GitHub login reads only with a
// role on the manifests repository (ReadPolicy, the web page's rule), and
// every kind of caller locks only under the lock rule (LockRule).

// ReadPolicy decides whether a GitHub login may read the reconciler's
// environments, history, locks and services: the web page's rule (a role
// on the manifests repository). The reconciler's GitHub client implements
// it (internal/cli adapts it).
type ReadPolicy interface {
	MayRead(ctx context.Context, login string) (ok bool, why string, err error)
}

// WithReadPolicy decides whether a GitHub login may read. Without it, a
// GitHub login reads nothing: no rule says who may.
func WithReadPolicy(p ReadPolicy) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("WithReadPolicy: nil policy")
		}
		o.readPolicy = p
		return nil
	}
}

// LockRule says who may take and remove their own locks (the lock scope;
// lock:admin is always granted outright).
type LockRule string

// The lock rules (locks.rule).
const (
	// LockApprovers: whoever has the lock or lock:admin scope explicitly
	// (a named token's scopes, Kubernetes RBAC on locks.stagehand.io), or may
	// approve in some environment (approve:<env> scopes, the GitHub approver
	// policy, Kubernetes RBAC on environments.stagehand.io). The default.
	LockApprovers LockRule = "approvers"
	// LockScope: only whoever has the lock or lock:admin scope explicitly;
	// GitHub logins, which have no scopes, never lock.
	LockScope LockRule = "scope"
	// LockReaders: whoever may read (the rule before lock rules existed).
	LockReaders LockRule = "readers"
)

// ParseLockRule reads a lock rule ("" is LockApprovers).
func ParseLockRule(s string) (LockRule, error) {
	switch r := LockRule(s); r {
	case "":
		return LockApprovers, nil
	case LockApprovers, LockScope, LockReaders:
		return r, nil
	}
	return "", fmt.Errorf("lock rule %q: want approvers, scope or readers", s)
}

// WithLockRule sets who may lock (default LockApprovers), and the
// environments in which approving counts for LockApprovers.
func WithLockRule(r LockRule, environments ...string) Option {
	return func(o *options) error {
		rule, err := ParseLockRule(string(r))
		if err != nil {
			return fmt.Errorf("WithLockRule: %w", err)
		}
		o.lockRule, o.environments = rule, append([]string(nil), environments...)
		return nil
	}
}

// authorizeRead decides the read scope: a named token with any scope, the
// legacy token, a Kubernetes user RBAC lets get environments.stagehand.io,
// a GitHub login the read policy admits.
func (a *Authenticator) authorizeRead(ctx context.Context, p Principal) (bool, string, error) {
	switch {
	case p.Kind == KindKubernetes && a.kube != nil && p.kube != nil:
		return a.kube.authorize(ctx, p, ScopeRead)
	case p.Kind == KindGitHub:
		if a.o.readPolicy == nil {
			return false, fmt.Sprintf("reading with a GitHub login needs a role on the manifests repository, and this reconciler has no GitHub read policy to ask: %s may not read", p.Name), nil
		}
		ok, why, err := a.o.readPolicy.MayRead(ctx, p.Name)
		if err != nil {
			return false, "", fmt.Errorf("checking whether %s may read: %w", p.Name, err)
		}
		if !ok {
			why = "reading needs a role on the manifests repository (read or higher): " + why
		}
		return ok, why, nil
	case granted(p.Scopes, ScopeRead):
		return true, "", nil
	}
	return false, fmt.Sprintf("%s lacks scope %s", p, ScopeRead), nil
}

// authorizeLock decides the lock scope under the lock rule.
func (a *Authenticator) authorizeLock(ctx context.Context, p Principal) (bool, string, error) {
	rule := a.o.lockRule
	if rule == LockReaders {
		return a.authorizeRead(ctx, p)
	}
	// Explicitly: a token's lock or lock:admin scope, Kubernetes RBAC on locks.
	switch {
	case p.Kind == KindKubernetes && a.kube != nil && p.kube != nil:
		ok, why, err := a.kube.authorize(ctx, p, ScopeLock)
		if err != nil || ok || rule == LockScope {
			return ok, why, err
		}
		if ok, why, err := a.kube.authorize(ctx, p, ScopeLockAdmin); err != nil || ok {
			return ok, why, err
		}
	case granted(p.Scopes, ScopeLock):
		return true, "", nil
	}
	if rule == LockScope {
		return false, fmt.Sprintf("%s lacks scope %s (locks.rule is scope: only the lock or lock:admin scope lets a caller lock)", p, ScopeLock), nil
	}
	// Or by approving in some environment.
	switch {
	case p.Kind == KindToken:
		for _, s := range p.Scopes {
			if strings.HasPrefix(s, ScopeApprove) && !p.legacy {
				return true, "may approve (" + s + ")", nil
			}
		}
	case p.Kind == KindGitHub && a.o.policy != nil:
		for _, env := range a.o.environments {
			ok, _, err := a.o.policy.MayApprove(ctx, env, p.Name)
			if err != nil {
				return false, "", fmt.Errorf("checking whether %s may approve in %s: %w", p.Name, env, err)
			}
			if ok {
				return true, "may approve in " + env, nil
			}
		}
	case p.Kind == KindKubernetes && a.kube != nil && p.kube != nil:
		for _, env := range a.o.environments {
			ok, _, err := a.kube.authorize(ctx, p, ApproveScope(env))
			if err != nil {
				return false, "", err
			}
			if ok {
				return true, "may approve in " + env, nil
			}
		}
	}
	return false, fmt.Sprintf("%s may not lock: locking needs the lock or lock:admin scope, or the right to approve in some environment (locks.rule is approvers), and %s has neither", p, p.Name), nil
}
