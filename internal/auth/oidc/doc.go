// Package oidc verifies the OIDC ID tokens of CI systems (GitHub Actions,
// GitLab CI): a Verifier trusts a list of issuers, discovers each one and
// reads its key set over a capped client (IssuerClient), judges a token's
// times on the issuer's clock followed from its answers rather than on this
// host's, refuses a token used twice, and turns the claims into a Caller
// (issuer, repository, ref, workflow, event). prbot's keyless bump API
// (internal/keyless) asks it who sent a request; like internal/auth it
// imports no component.
package oidc
