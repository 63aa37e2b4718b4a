package chart

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLint(t *testing.T) {
	tests := []struct {
		name   string
		values []string
	}{
		{name: "default values"},
		{name: "full values", values: []string{fullValues(t)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t).Lint(t.Context(), chartDir(t), tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint output:\n%s", out)
			}
		})
	}
}

// TestTemplateObjects pins what each values file renders.
func TestTemplateObjects(t *testing.T) {
	tests := []struct {
		name   string
		values func(t *testing.T) []string
		want   []string
	}{
		{
			name:   "default values",
			values: func(*testing.T) []string { return nil },
			want: []string{
				// crds.apply: get, create and patch on the two CRDs.
				"ClusterRole /rel-sh-stagehand-crds",
				"ClusterRoleBinding /rel-sh-stagehand-crds",
				"ConfigMap rel/sh-stagehand",
				"CustomResourceDefinition /environments.stagehand.io",
				"CustomResourceDefinition /locks.stagehand.io",
				"Deployment rel/sh-stagehand",
				// networkPolicy.enabled (opt-out): in only on 8080, out only DNS, the API server, remote servers.
				"NetworkPolicy rel/sh-stagehand",
				"PodDisruptionBudget rel/sh-stagehand",
				"Role rel/sh-stagehand",
				"RoleBinding rel/sh-stagehand",
				"Service rel/sh-stagehand",
				"ServiceAccount rel/sh-stagehand",
			},
		},
		{
			name:   "full values",
			values: func(t *testing.T) []string { return []string{fullValues(t)} },
			want: []string{
				// rbac.kubernetesAuth: TokenReview and SubjectAccessReview.
				"ClusterRole /rel-sh-stagehand-auth",
				"ClusterRole /rel-sh-stagehand-crds",
				"ClusterRoleBinding /rel-sh-stagehand-auth",
				"ClusterRoleBinding /rel-sh-stagehand-crds",
				"ConfigMap rel/sh-stagehand",
				// metrics.dashboard.
				"ConfigMap rel/sh-stagehand-dashboard",
				"ConfigMap rel/sh-stagehand-prbot",
				"CustomResourceDefinition /environments.stagehand.io",
				"CustomResourceDefinition /locks.stagehand.io",
				"Deployment rel/sh-stagehand",
				"Deployment rel/sh-stagehand-prbot",
				"Ingress rel/sh-stagehand",
				"NetworkPolicy rel/sh-stagehand",
				"NetworkPolicy rel/sh-stagehand-prbot",
				"PodDisruptionBudget rel/sh-stagehand",
				"PrometheusRule rel/sh-stagehand",
				"Role apps-devel/sh-stagehand-workloads",
				"Role apps-extra/sh-stagehand-workloads",
				"Role apps-prod/sh-stagehand-workloads",
				"Role rel/sh-stagehand",
				"RoleBinding apps-devel/sh-stagehand-workloads",
				"RoleBinding apps-extra/sh-stagehand-workloads",
				"RoleBinding apps-prod/sh-stagehand-workloads",
				"RoleBinding rel/sh-stagehand",
				"Service rel/sh-stagehand",
				"Service rel/sh-stagehand-prbot",
				"ServiceAccount rel/sh-stagehand",
				"ServiceAccount rel/sh-stagehand-prbot",
				"ServiceMonitor rel/sh-stagehand",
			},
		},
		{
			name: "cluster-wide RBAC",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{"rbac": map[string]any{"clusterWide": true}})}
			},
			want: []string{
				"ClusterRole /rel-sh-stagehand-crds",
				"ClusterRole /rel-sh-stagehand-workloads",
				"ClusterRoleBinding /rel-sh-stagehand-crds",
				"ClusterRoleBinding /rel-sh-stagehand-workloads",
				"ConfigMap rel/sh-stagehand",
				"CustomResourceDefinition /environments.stagehand.io",
				"CustomResourceDefinition /locks.stagehand.io",
				"Deployment rel/sh-stagehand",
				// networkPolicy.enabled (opt-out): in only on 8080, out only DNS, the API server, remote servers.
				"NetworkPolicy rel/sh-stagehand",
				"PodDisruptionBudget rel/sh-stagehand",
				"Role rel/sh-stagehand",
				"RoleBinding rel/sh-stagehand",
				"Service rel/sh-stagehand",
				"ServiceAccount rel/sh-stagehand",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(render(t, "rel", tc.values(t)...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
		})
	}
}

// podFacts is what the chart promises about the reconciler's pod.
type podFacts struct {
	Replicas         int64
	Image            string
	Command, Args    []string
	RunAsNonRoot     bool
	RunAsUser        int64
	ReadOnlyRoot     bool
	NoEscalation     bool
	DropCaps         []string
	Liveness         string
	Readiness        string
	RequestsCPU      string
	RequestsMemory   string
	PrometheusScrape string
	PrometheusPort   string
	ServiceAccount   string
	ContainerPort    int64
	ConfigMountedAt  string
	ProjectedSecrets []string
}

func TestDeployment(t *testing.T) {
	tests := []struct {
		name   string
		values func(t *testing.T) []string
		want   podFacts
	}{
		{
			name:   "default values",
			values: func(*testing.T) []string { return nil },
			want: podFacts{
				Replicas: 2, Image: "ghcr.io/stagehand-gitops/stagehand:0.1.0",
				Command:      []string{"/reconciler"},
				Args:         []string{"run", "--config=/etc/stagehand/reconciler.yaml", "--log-level=info", "--enable-leader-election=true", "--apply-crds=true"},
				RunAsNonRoot: true, RunAsUser: 65532, ReadOnlyRoot: true, NoEscalation: true, DropCaps: []string{"ALL"},
				Liveness: "/healthz", Readiness: "/readyz", RequestsCPU: "50m", RequestsMemory: "128Mi",
				PrometheusScrape: "true", PrometheusPort: "8080", ServiceAccount: "sh-stagehand", ContainerPort: 8080,
				ConfigMountedAt: "/etc/stagehand",
			},
		},
		{
			name:   "full values",
			values: func(t *testing.T) []string { return []string{fullValues(t)} },
			want: podFacts{
				Replicas:     2,
				Image:        "registry.example.com/platform/stagehand:0.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				Command:      []string{"/reconciler"},
				Args:         []string{"run", "--config=/etc/stagehand/reconciler.yaml", "--log-level=debug", "--enable-leader-election=true", "--apply-crds=true"},
				RunAsNonRoot: true, RunAsUser: 65532, ReadOnlyRoot: true, NoEscalation: true, DropCaps: []string{"ALL"},
				Liveness: "/healthz", Readiness: "/readyz", RequestsCPU: "100m", RequestsMemory: "256Mi",
				PrometheusScrape: "true", PrometheusPort: "8080", ServiceAccount: "sh-stagehand", ContainerPort: 8080,
				ConfigMountedAt:  "/etc/stagehand",
				ProjectedSecrets: []string{"stagehand-api", "stagehand-git", "stagehand-git-ca", "stagehand-github-app", "stagehand-gpg", "stagehand-registry", "stagehand-ssh-signers", "stagehand-tokens", "stagehand-webhook"},
			},
		},
		{
			name: "crds.apply false",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{"crds": map[string]any{"apply": false}})}
			},
			want: podFacts{
				Replicas: 2, Image: "ghcr.io/stagehand-gitops/stagehand:0.1.0",
				Command:      []string{"/reconciler"},
				Args:         []string{"run", "--config=/etc/stagehand/reconciler.yaml", "--log-level=info", "--enable-leader-election=true", "--apply-crds=false"},
				RunAsNonRoot: true, RunAsUser: 65532, ReadOnlyRoot: true, NoEscalation: true, DropCaps: []string{"ALL"},
				Liveness: "/healthz", Readiness: "/readyz", RequestsCPU: "50m", RequestsMemory: "128Mi",
				PrometheusScrape: "true", PrometheusPort: "8080", ServiceAccount: "sh-stagehand", ContainerPort: 8080,
				ConfigMountedAt: "/etc/stagehand",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := find(t, render(t, "rel", tc.values(t)...), "Deployment", "rel", "sh-stagehand")
			if diff := cmp.Diff(tc.want, facts(t, d)); diff != "" {
				t.Errorf("reconciler Deployment (-want +got):\n%s", diff)
			}
		})
	}
}

func facts(t *testing.T, d *unstructured.Unstructured) podFacts {
	t.Helper()
	str := func(obj map[string]any, fields ...string) string {
		s, _, _ := unstructured.NestedString(obj, fields...)
		return s
	}
	num := func(obj map[string]any, fields ...string) int64 {
		n, _, _ := unstructured.NestedInt64(obj, fields...)
		return n
	}
	flag := func(obj map[string]any, fields ...string) bool {
		b, _, _ := unstructured.NestedBool(obj, fields...)
		return b
	}
	strs := func(obj map[string]any, fields ...string) []string {
		s, _, _ := unstructured.NestedStringSlice(obj, fields...)
		return s
	}
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	cs, _, _ := unstructured.NestedSlice(spec, "containers")
	if len(cs) != 1 {
		t.Fatalf("reconciler pod has %d containers, want 1", len(cs))
	}
	c := cs[0].(map[string]any)
	f := podFacts{
		Replicas:         num(d.Object, "spec", "replicas"),
		Image:            str(c, "image"),
		Command:          strs(c, "command"),
		Args:             strs(c, "args"),
		RunAsNonRoot:     flag(spec, "securityContext", "runAsNonRoot") && flag(c, "securityContext", "runAsNonRoot"),
		RunAsUser:        num(spec, "securityContext", "runAsUser"),
		ReadOnlyRoot:     flag(c, "securityContext", "readOnlyRootFilesystem"),
		NoEscalation:     !flag(c, "securityContext", "allowPrivilegeEscalation"),
		DropCaps:         strs(c, "securityContext", "capabilities", "drop"),
		Liveness:         str(c, "livenessProbe", "httpGet", "path"),
		Readiness:        str(c, "readinessProbe", "httpGet", "path"),
		RequestsCPU:      str(c, "resources", "requests", "cpu"),
		RequestsMemory:   str(c, "resources", "requests", "memory"),
		PrometheusScrape: str(d.Object, "spec", "template", "metadata", "annotations", "prometheus.io/scrape"),
		PrometheusPort:   str(d.Object, "spec", "template", "metadata", "annotations", "prometheus.io/port"),
		ServiceAccount:   str(spec, "serviceAccountName"),
	}
	ports, _, _ := unstructured.NestedSlice(c, "ports")
	if len(ports) == 1 {
		f.ContainerPort = num(ports[0].(map[string]any), "containerPort")
	}
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, m := range mounts {
		if str(m.(map[string]any), "name") == "config" {
			f.ConfigMountedAt = str(m.(map[string]any), "mountPath")
		}
	}
	f.ProjectedSecrets = projected(spec)
	return f
}

// projected returns the names of the Secrets in the config volume.
func projected(podSpec map[string]any) []string {
	var names []string
	vols, _, _ := unstructured.NestedSlice(podSpec, "volumes")
	for _, v := range vols {
		srcs, _, _ := unstructured.NestedSlice(v.(map[string]any), "projected", "sources")
		for _, s := range srcs {
			if n, ok, _ := unstructured.NestedString(s.(map[string]any), "secret", "name"); ok {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}
