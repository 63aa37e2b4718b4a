// Package oidctest is an OpenID Connect issuer for tests, in the process
// on loopback TLS: a discovery document, a JWKS whose keys it rotates, and
// ID tokens signed with the claim sets GitHub Actions and GitLab CI send.
package oidctest
