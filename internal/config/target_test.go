package config

import (
	"testing"
	"time"
)

func TestTargets(t *testing.T) {
	env := func(target string) string { return "environments: {prod: {targets: [" + target + "]}}" }
	for _, tc := range []struct {
		name, yaml string
		want       Target
		err        string
	}{
		{name: "defaults", yaml: env("{name: a, namespace: apps}"), want: Target{Name: "a", Namespace: "apps", Timeout: Duration{30 * time.Second}}},
		{name: "kubeconfig Secret", yaml: env("{name: a, namespace: apps, kubeconfigSecret: {name: eu-cluster}, context: eu, timeout: 10s}"),
			want: Target{Name: "a", Namespace: "apps", Context: "eu", KubeconfigSecret: &SecretKey{Name: "eu-cluster", Key: "kubeconfig"}, Timeout: Duration{10 * time.Second}}},
		{name: "kubeconfig Secret and key", yaml: env("{name: a, namespace: apps, kubeconfigSecret: {name: eu-cluster, key: value}}"),
			want: Target{Name: "a", Namespace: "apps", KubeconfigSecret: &SecretKey{Name: "eu-cluster", Key: "value"}, Timeout: Duration{30 * time.Second}}},
		{name: "Argo CD cluster Secret", yaml: env("{name: a, namespace: apps, clusterSecret: cluster-eu}"),
			want: Target{Name: "a", Namespace: "apps", ClusterSecret: "cluster-eu", Timeout: Duration{30 * time.Second}}},
		{name: "two ways", yaml: env("{name: a, namespace: apps, kubeconfig: /k, clusterSecret: eu}"),
			err: "environments.prod.targets[0]: kubeconfig and clusterSecret given together; give one way to reach the cluster"},
		{name: "bad Secret name", yaml: env("{name: a, namespace: apps, clusterSecret: EU_cluster}"),
			err: `environments.prod.targets[0].clusterSecret: invalid Secret name "EU_cluster"`},
		{name: "bad kubeconfig Secret name", yaml: env("{name: a, namespace: apps, kubeconfigSecret: {key: k}}"),
			err: `environments.prod.targets[0].kubeconfigSecret.name: invalid Secret name ""`},
		{name: "bad key", yaml: env("{name: a, namespace: apps, kubeconfigSecret: {name: s, key: 'a b'}}"),
			err: `environments.prod.targets[0].kubeconfigSecret.key: invalid key "a b"`},
		{name: "context with an Argo CD Secret", yaml: env("{name: a, namespace: apps, clusterSecret: eu, context: x}"),
			err: `environments.prod.targets[0].context: "x" given with clusterSecret, which has no contexts`},
		{name: "negative timeout", yaml: env("{name: a, namespace: apps, timeout: -1s}"),
			err: "environments.prod.targets[0].timeout: must not be negative, got -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Target { return c.Environments["prod"].Targets[0] })
		})
	}
}
