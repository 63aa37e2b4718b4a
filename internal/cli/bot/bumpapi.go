package bot

import (
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

// newBumpAPI builds the keyless bump API of prbot serve's oidc section,
// logging every request with the caller's identity (never the token).
// Each issuer's clock, which tokens are judged on, is followed from local.
func newBumpAPI(c *config.Prbot, b *prbot.Bot, log serveLogger, local func() time.Time) (*keyless.BumpAPI, error) {
	client, err := oidc.IssuerClient(c.OIDC.CAFile)
	if err != nil {
		return nil, err
	}
	opts := []keyless.Option{keyless.WithIssuerClient(client), keyless.WithKeyRefresh(c.OIDC.KeyRefresh.Duration), keyless.WithLocalClock(local), keyless.WithBumpLog(func(l keyless.BumpLog) { logBump(log, l) })}
	for _, is := range c.OIDC.Issuers {
		opts = append(opts, keyless.WithIssuer(is))
	}
	return keyless.NewBumpAPI(b, opts...)
}

func logBump(log serveLogger, l keyless.BumpLog) {
	kv := []any{"status", l.Status}
	if c := l.Caller; c != nil {
		kv = append(kv, "issuer", c.Issuer, "repository", c.Repository, "ref", c.Ref, "event", c.Event, "workflow", c.WorkflowRef, "actor", c.Actor, "run", c.Run)
	} else if c := l.Claimed; c != nil {
		kv = append(kv, "unverifiedIssuer", c.Issuer, "unverifiedRepository", c.Repository, "unverifiedSubject", c.Subject)
	}
	if b := l.Body; b != nil {
		kv = append(kv, "environment", b.Environment, "file", b.File, "service", b.Service, "container", b.Container, "tag", b.Tag)
	}
	if r := l.Result; r != nil {
		kv = append(kv, "pr", r.PR, "changed", r.Changed, "merged", r.Merged)
	}
	switch {
	case l.Err == nil:
		log.Info("bump accepted", kv...)
	case l.Status >= 500:
		log.Error(l.Err, "bump failed", append(kv, "reason", l.Reason)...)
	default:
		log.Info("bump refused", append(kv, "reason", l.Reason, "error", l.Err.Error())...)
	}
}
