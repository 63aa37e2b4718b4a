// Package auth says who is calling the reconciler's API and what they may do.
//
// An Authenticator turns the bearer token of a request into a Principal:
// a named token from a mounted file of tokens with scopes (read, lock,
// lock:admin, approve:<env>, approve:*), the legacy single API token (read
// and lock only), a GitHub user token (the login learned with GET /user;
// approving is decided by the same approver policy as a check-run click), or,
// when enabled, a Kubernetes bearer token (TokenReview, then a
// SubjectAccessReview for every scope). Authorize then decides one scope for
// one principal, with a reason a person can act on when it says no.
package auth
