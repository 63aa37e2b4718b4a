package daemon

import (
	"context"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Approvals are counted under the environment's policy by internal/tally's
// Counter (built in Daemon.workerDeps); the daemon gives it the locks its
// rules read.

// policyLocks lists the locks in force at and beneath lockPath, as approval rules see them; nil without a
// lock service or lockPath.
func policyLocks(svc *lock.Service, lockPath string) func(ctx context.Context) ([]policy.Lock, error) {
	if svc == nil || lockPath == "" {
		return nil
	}
	return func(ctx context.Context) ([]policy.Lock, error) {
		ls, err := svc.List(ctx, lockPath)
		if err != nil {
			return nil, err
		}
		now := svc.Now()
		out := []policy.Lock{}
		for _, l := range ls {
			if l.Expired(now) {
				continue
			}
			svc := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(l.Path), strings.ToLower(lockPath)), "/")
			out = append(out, policy.Lock{Service: svc, Author: l.Author, Type: string(l.Type)})
		}
		return out, nil
	}
}
