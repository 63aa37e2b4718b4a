// Package reconcile turns a resolved environment into a plan against the
// environment's target clusters and namespaces, and applies a plan exactly:
// it patches only the container images that change, records the revision,
// emits an Event per workload and waits for each rollout.
//
// A plan costs one List per workload kind per target, however many services
// the manifest holds; each distinct image is resolved in the registry once.
package reconcile
