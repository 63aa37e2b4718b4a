package config

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultTargetTimeout bounds each request to a target's API server.
const DefaultTargetTimeout = 30 * time.Second

// DefaultKubeconfigSecretKey is the key of a kubeconfigSecret when none is given.
const DefaultKubeconfigSecretKey = "kubeconfig"

// defaultCluster fills in a target's timeout and kubeconfigSecret key.
func (t *Target) defaultCluster() {
	if t.Timeout.Duration == 0 {
		t.Timeout.Duration = DefaultTargetTimeout
	}
	if t.KubeconfigSecret != nil && t.KubeconfigSecret.Key == "" {
		t.KubeconfigSecret.Key = DefaultKubeconfigSecretKey
	}
}

// validateCluster checks how the target's cluster is described: at most one
// of kubeconfig, kubeconfigSecret and clusterSecret, with valid Secret names.
func (t *Target) validateCluster(f string, bad func(field, format string, a ...any)) {
	var given []string
	if t.Kubeconfig != "" {
		given = append(given, "kubeconfig")
	}
	if t.KubeconfigSecret != nil {
		given = append(given, "kubeconfigSecret")
		if msgs := validation.IsDNS1123Subdomain(t.KubeconfigSecret.Name); len(msgs) > 0 {
			bad(f+".kubeconfigSecret.name", "invalid Secret name %q: %s", t.KubeconfigSecret.Name, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsConfigMapKey(t.KubeconfigSecret.Key); t.KubeconfigSecret.Key != "" && len(msgs) > 0 {
			bad(f+".kubeconfigSecret.key", "invalid key %q: %s", t.KubeconfigSecret.Key, strings.Join(msgs, "; "))
		}
	}
	if t.ClusterSecret != "" {
		given = append(given, "clusterSecret")
		if msgs := validation.IsDNS1123Subdomain(t.ClusterSecret); len(msgs) > 0 {
			bad(f+".clusterSecret", "invalid Secret name %q: %s", t.ClusterSecret, strings.Join(msgs, "; "))
		}
		if t.Context != "" {
			bad(f+".context", "%q given with clusterSecret, which has no contexts", t.Context)
		}
	}
	if len(given) > 1 {
		bad(f, "%s given together; give one way to reach the cluster", strings.Join(given, " and "))
	}
	if t.Timeout.Duration < 0 {
		bad(f+".timeout", "must not be negative, got %s", t.Timeout.Duration)
	}
}
