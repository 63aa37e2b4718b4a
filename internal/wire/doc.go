// Package wire turns the configuration (internal/config) into the components
// the commands and the daemon run: Kubernetes clients and reconcile targets,
// the lock service, the reconciler, the git source and the manifest options.
//
// It is the one place where configuration becomes components, so that
// `reconciler plan`, `reconciler apply`, `reconciler run` and prbot talk to
// clusters, locks and the manifests repository the same way:
//
//	clients, err := wire.NewClients()                        // one client per kubeconfig and context
//	targets, err := clients.Targets(cfg, "production", nil)  // reconcile.Target per configured target
//	locks, err := wire.LockService(clients, cfg)             // locks.storage in the state cluster
//	rec, err := wire.Reconciler(cfg, wire.WithReconcileOptions(reconcile.WithLocks(c, c)))
//	src, err := wire.Source(cfg.Source)                      // pkg/gitsource with source.* translated
//	env, err := manifest.Resolve(ctx, fsys, root, name, wire.ManifestOptions(cfg.Manifest)...)
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
