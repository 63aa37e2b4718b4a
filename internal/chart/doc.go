// Package chart drives the helm binary over Stagehand's Helm chart
// (charts/stagehand): it finds or builds the pinned helm, lints and renders
// the chart, and splits the rendered manifests into objects for the API
// server. Its tests prove the chart against a real kube-apiserver.
package chart
