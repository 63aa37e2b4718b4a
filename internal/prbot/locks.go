package prbot

import (
	"context"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

// LockClient adapts pkg/lock/lockapi's REST client (the reconciler's
// GET /api/v1/check/{path}: 200 free, 423 locked) to a LockChecker. now
// (time.Now when nil) judges the expiry of the locks it lists: a clock
// that follows true time (the bot's, GitHub's), since the reconciler
// writes expiries on its API server's.
func LockClient(c *lockapi.Client, now func() time.Time) LockChecker {
	if now == nil {
		now = time.Now
	}
	return restLocks{c: c, now: now}
}

type restLocks struct {
	c   *lockapi.Client
	now func() time.Time
}

// Blocking returns a message for each lock blocking lockType at path or a prefix of it.
func (r restLocks) Blocking(ctx context.Context, path, lockType string) ([]string, error) {
	locks, err := r.c.Check(ctx, path, lock.Type(lockType), true) // every prefix of path
	if err != nil {
		return nil, err
	}
	msgs := make([]string, 0, len(locks))
	for _, l := range locks {
		msgs = append(msgs, l.BlockingMessage(time.UTC))
	}
	return msgs, nil
}
