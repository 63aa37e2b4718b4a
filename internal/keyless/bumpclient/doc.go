// Package bumpclient is the client of prbot serve's keyless bump API (POST
// /api/v1/bumps, internal/keyless's BumpAPI): it gets the CI job's OIDC ID
// token (GitHub Actions' token request service, or a job variable such as
// GitLab's id_tokens) and posts a bump with it, to https (plain http only to
// this machine), never following a redirect, reading a bounded answer into
// the server's own types (prbot's BumpResult, keyless's BumpError).
package bumpclient
