// Package lease decides which replica works which environment, with
// Kubernetes Leases in the state namespace.
//
// With one Lease (Name), the replicas elect a leader through client-go's
// leader election (Lead); the leader's work ends with ErrLost as its cause
// when the Lease is lost, and is given its grace when the process shuts
// down. With a Lease per environment (leaderElection.perEnvironment), each
// replica's Shard announces itself with a member Lease and holds its fair
// share of the environment Leases, taking over one whose holder stopped
// renewing it (judged on this replica's monotonic clock, never the holder's
// stamps), and claiming the environment's state (internal/state) in the
// Lease's term before its worker starts. Replicas started with different
// settings never work an environment at once (mixed.go: a Shard stands by
// while a single leader renews Name, and a new single leader waits for
// WaitEnvLeases).
//
// What runs while an environment is held is the caller's (Deps.Start): the
// daemon's worker.
package lease
