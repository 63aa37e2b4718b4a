// Package wire turns the configuration (internal/config) into the components
// the commands and the daemon run: Kubernetes clients and reconcile targets,
// the state store, the lock service, the reconciler, the git source, the
// webhook receiver, the GitHub client, the one HTTP transport to GitHub and
// the manifest options.
//
// It is the one place where configuration becomes components, so that
// `reconciler plan`, `reconciler apply`, `reconciler run`, the PR previews
// and prbot talk to clusters, locks, GitHub and the manifests repository the
// same way. A Builder builds each part of one process once, on first use:
//
//	b, err := wire.New(cfg, wire.DaemonOptions(identity, log)...)
//	store, err := b.Store()                // internal/state over the state client, on its API server's clock
//	targets, err := b.AllTargets()         // reconcile.Target per configured target, one client per cluster
//	locks, err := b.LockService()          // locks.storage in the state cluster
//	rec, err := b.Reconciler()             // checking locks, as WithAuthor
//	src, err := b.Source()                 // pkg/gitsource with source.* translated
//	gh, err := b.GitHub()                  // github.app, over the one transport to GitHub
//	rt, err := b.HTTPTransport()           // the one transport to GitHub, for its other users
//
// The functions NewClients, LockService, Reconciler and Source build one
// part alone (the lock command's own cluster, for example).
//
// Every Kubernetes client speaks protobuf, has no client-side rate limit
// (the reconciler bounds its requests in flight with workloads.concurrency
// and the API server's priority and fairness protects it) and identifies
// itself with the user agent "stagehand". Errors name the configuration key
// they come from (source.caFile, environments.<env>.targets[i], locks).
//
// A target may name, instead of a kubeconfig file, a Secret in
// state.namespace holding a kubeconfig (kubeconfigSecret) or an Argo CD
// cluster Secret (clusterSecret). Its client follows the Secret through a
// watch: every request goes to the server, with the credentials, of the
// Secret's current version, so a rotated token needs no restart. Every
// request to a target but a watch is bounded by the target's timeout.
// Clients.Close stops the watches.
//
// The packages under pkg/ know nothing of the configuration; wire is what
// translates it into their options.
package wire
