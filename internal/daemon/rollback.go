package daemon

import (
	"context"
)

// RollbackHook is called once a failed rollout of env has been rolled back
// and recorded as history entry entryID, with the cause: the rollback
// command's side opens the rollback pull request with a hold, so that git
// matches the cluster again. Its error is logged and counted; the rollback
// stands either way.
type RollbackHook func(ctx context.Context, env string, entryID int64, cause string) error
