// Package wake hands a push webhook to the replica that polls: a push may
// reach any replica, but only the leader (or, with
// leaderElection.perEnvironment, each replica for what it holds) polls the
// source. A replica that does not poll rings the Bell: it sets one
// annotation on the ConfigMap ConfigMapName in the state namespace (a merge
// patch of that one key, so concurrent writers never conflict); the pollers
// watch that ConfigMap (Bell.Watch) and poll at once on every change, and
// again whenever the watch had to be listed afresh (a wake-up may have been
// missed).
package wake
