// Package login is how a person gets a credential for the reconciler's API
// from a terminal: GitHub's OAuth device flow (RFC 8628; DeviceFlow: a code
// to enter on GitHub, then the user token GitHub issues, polled at the
// interval GitHub asks), and where that token is kept for the API commands
// (TokenPath, SaveToken, SavedToken). The server verifies the token as any
// GitHub user token (internal/auth); the command only prompts.
package login
