// Package state keeps what the reconciler must not forget about an
// environment (its pending plan, the apply in flight, decisions handed to
// the leader, outcomes still to report, the delivery sequence's run, a
// rollback under way, the history and the last observed status) in a
// ConfigMap named stagehand-state-<env>, so that it survives restarts and
// every replica reads the same.
//
// A Store reads and writes those ConfigMaps. Each value is kept within the
// API server's 1 MiB limit as plain JSON, gzip, or gzip split across part
// ConfigMaps with an index (statesize.go), trimming the history, then the
// status' layout and detail, before anything an approval binds to; the
// history keeps each distinct service, file and layout of its resolved
// manifests once (historypack.go). With a Lease per environment, a Store
// Fenced by its holder's term refuses to write over a state a later term
// has claimed (fence.go).
//
// Each state ConfigMap records the schema it was written with (schema.go):
// a Store reads the schemas before its own as they were (golden fixtures
// under testdata/golden hold it to that), refuses, without writing, a newer
// schema that declares it cannot be read by this one (SchemaError, naming
// both versions), and, writing a newer schema it may read, keeps every key
// it does not know as the newer build wrote it.
//
// Deliveries is another record, not an environment's: the webhook
// deliveries that reached an approval path, in ConfigMap
// stagehand-deliveries, so that one decides once on any replica.
//
// What goes into the records is the daemon's (internal/daemon); this
// package knows only how they are kept.
package state
