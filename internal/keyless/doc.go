// Package keyless is prbot serve's keyless bump API (POST /api/v1/bumps):
// upstream CI proves who it is with its OIDC ID token (verified by
// internal/auth/oidc), and may bump only a file its repository owns
// (pipeline.yaml's owners, or the file named after the repository under the
// rules of byName), in a stage that accepts bumps, from a run the stage's
// bumpClaims allow, within a rate per repository. The bump itself is
// internal/prbot's Bot.Bump, with the bot's own credentials; every refusal
// is the one JSON error body of every Stagehand door with a reason for
// programs (BumpError). The package never logs: each request reaches
// WithBumpLog.
package keyless
