// Package kube builds Kubernetes clients for the configured targets: one
// client per kubeconfig and context, shared by every target that uses it.
package kube
