package lock

import (
	"context"
	"fmt"
	"strings"
)

// Caller is who asks the lock service for something, as the server that
// received the request verified it (pkg/lock verifies nothing itself).
type Caller struct {
	// Name is the verified identity: the author of the locks the caller
	// takes, and whose locks it may remove (compared with the lock's author
	// by the Service's WithOwnerEqual). A server with several kinds of
	// credentials writes it typed, "kind:name" ("github:alice", "token:ci").
	Name string
	// Admin may remove the live locks of others (the API's lock:admin scope).
	Admin bool
}

// ForbiddenError says that a caller tried to remove live locks that are
// not theirs without being an admin; nothing was removed.
type ForbiddenError struct {
	Caller Caller
	Locks  []Lock // the locks of others that stopped it
}

func (e *ForbiddenError) Error() string {
	owners := make([]string, len(e.Locks))
	for i, l := range e.Locks {
		owners[i] = fmt.Sprintf("%s (%s by %s)", l.Path, l.Type, l.Author)
	}
	return fmt.Sprintf("%s may remove only their own locks, and %s is not: removing the locks of others needs lock:admin",
		e.Caller.Name, strings.Join(owners, ", "))
}

// UnlockRecorder is implemented by storages that keep a trace of who
// removed a lock (Kubernetes: an Event on the Lock object), since the
// removed lock itself is gone.
type UnlockRecorder interface {
	RecordUnlock(ctx context.Context, removed Lock, message string) error
}
