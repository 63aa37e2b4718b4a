// Package locks builds the reconciler's lock commands (lock, unlock,
// check, prune, list): a deploy lock taken, removed, checked or listed
// through the reconciler's API (--server) or straight in the cluster's Lock
// objects (--storage kubernetes, on the API server's clock), with the
// lock's refusals (held, invalid, expired) printed the way CI jobs read
// them. internal/cli composes them into the reconciler's tree.
package locks
