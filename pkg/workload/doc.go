// Package workload describes the workload kinds a service maps to, once:
// Deployment, StatefulSet, DaemonSet, CronJob and Argo Rollouts' Rollout
// (read through a target's dynamic client, argo.go). A Kind says how to reach
// it on a Cluster (list, watch, get, patch), where its pod template is, what a
// watch cache keeps of it (Strip, Cached) and how its rollout is judged
// (Judge: kstatus, as Flux judges it, after Stagehand's stricter checks). It
// also reads Flagger's Canaries (flagger.go), by which a Deployment or
// DaemonSet a Canary targets is judged instead.
//
// pkg/reconcile plans and applies over these kinds; this package knows
// nothing of plans, locks or registries. A new kind is one entry in the kinds
// table (kinds.go).
package workload

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Workload kinds a service maps to.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindCronJob     = "CronJob"
)

// InitPrefix marks an init container in a Container's name ("init:migrate");
// Kubernetes container names cannot contain a colon, so it never collides.
const InitPrefix = "init:"

// RevisionAnnotation is the annotation a patch records the revision in;
// FieldManager is the field manager patches are sent as.
const (
	RevisionAnnotation = "stagehand.io/revision"
	FieldManager       = "stagehand"
)

// Cluster is what reaches one target cluster's workloads.
type Cluster struct {
	Client kubernetes.Interface
	// Dynamic, when set, reaches the kinds served by a
	// CustomResourceDefinition (Argo Rollouts' Rollout); without it the
	// cluster has none of them.
	Dynamic dynamic.Interface
}
