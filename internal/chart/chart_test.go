package chart

import (
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stagehand-gitops/stagehand/internal/config"
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
				"ConfigMap rel/sh-stagehand",
				"CustomResourceDefinition /locks.stagehand.io",
				"Deployment rel/sh-stagehand",
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
				"ConfigMap rel/sh-stagehand",
				"ConfigMap rel/sh-stagehand-prbot",
				"CustomResourceDefinition /locks.stagehand.io",
				"Deployment rel/sh-stagehand",
				"Deployment rel/sh-stagehand-prbot",
				"Ingress rel/sh-stagehand",
				"PodDisruptionBudget rel/sh-stagehand",
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
				"ClusterRole /rel-sh-stagehand-workloads",
				"ClusterRoleBinding /rel-sh-stagehand-workloads",
				"ConfigMap rel/sh-stagehand",
				"CustomResourceDefinition /locks.stagehand.io",
				"Deployment rel/sh-stagehand",
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
				Args:         []string{"run", "--config=/etc/stagehand/reconciler.yaml", "--log-level=info", "--enable-leader-election=true"},
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
				Args:         []string{"run", "--config=/etc/stagehand/reconciler.yaml", "--log-level=debug", "--enable-leader-election=true"},
				RunAsNonRoot: true, RunAsUser: 65532, ReadOnlyRoot: true, NoEscalation: true, DropCaps: []string{"ALL"},
				Liveness: "/healthz", Readiness: "/readyz", RequestsCPU: "100m", RequestsMemory: "256Mi",
				PrometheusScrape: "true", PrometheusPort: "8080", ServiceAccount: "sh-stagehand", ContainerPort: 8080,
				ConfigMountedAt:  "/etc/stagehand",
				ProjectedSecrets: []string{"stagehand-api", "stagehand-git", "stagehand-github-app", "stagehand-gpg", "stagehand-webhook"},
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

// projectedFiles returns every file path the config volume provides, as the
// container sees it (under /etc/stagehand).
func projectedFiles(podSpec map[string]any) map[string]bool {
	files := map[string]bool{}
	vols, _, _ := unstructured.NestedSlice(podSpec, "volumes")
	for _, v := range vols {
		srcs, _, _ := unstructured.NestedSlice(v.(map[string]any), "projected", "sources")
		for _, s := range srcs {
			for _, kind := range []string{"secret", "configMap"} {
				items, _, _ := unstructured.NestedSlice(s.(map[string]any), kind, "items")
				for _, it := range items {
					p, _, _ := unstructured.NestedString(it.(map[string]any), "path")
					files[path.Join("/etc/stagehand", p)] = true
				}
			}
		}
	}
	return files
}

// renderedConfig returns reconciler.yaml as rendered into the ConfigMap.
func renderedConfig(t *testing.T, objs []*unstructured.Unstructured) []byte {
	t.Helper()
	cm := find(t, objs, "ConfigMap", "", "sh-stagehand")
	s, ok, _ := unstructured.NestedString(cm.Object, "data", "reconciler.yaml")
	if !ok {
		t.Fatal("ConfigMap sh-stagehand has no reconciler.yaml")
	}
	return []byte(s)
}

// TestConfig loads the rendered reconciler.yaml with the reconciler's own
// strict parser and checks the fields the chart fills in, and that every
// file it names is mounted.
func TestConfig(t *testing.T) {
	type fields struct {
		URL, Branch, Root, Interval, CacheDir string
		TokenFile, SSHKeyFile, KnownHosts     string
		GitApp                                *config.GitHubApp
		Verify                                *config.Verify
		Environments                          []string
		Targets                               int
		GitHubApp                             *config.GitHubApp
		WebhookSecretFile, APITokenFile       string
		Listen, LocksStorage, LocksNamespace  string
		StateNamespace                        string
		Insecure                              []string
		MinPermission                         string
	}
	tests := []struct {
		name   string
		values func(t *testing.T) []string
		want   fields
	}{
		{
			name:   "default values",
			values: func(*testing.T) []string { return nil },
			want: fields{Branch: "main", Root: ".", Interval: "1m0s", CacheDir: "/var/cache/stagehand",
				Environments: []string{}, Listen: ":8080", LocksStorage: "kubernetes", LocksNamespace: "rel",
				StateNamespace: "rel", MinPermission: "maintain"},
		},
		{
			name:   "full values",
			values: func(t *testing.T) []string { return []string{fullValues(t)} },
			want: fields{URL: "https://github.com/acme/manifests.git", Branch: "main", Root: "deploy", Interval: "30s",
				CacheDir:     "/var/cache/stagehand",
				TokenFile:    "/etc/stagehand/secrets/git-token/token",
				Verify:       &config.Verify{Mode: "head", KeyringFile: "/etc/stagehand/secrets/gpg-keyring/keyring"},
				Environments: []string{"devel", "prod"}, Targets: 3,
				GitHubApp: &config.GitHubApp{AppID: 123456, InstallationID: 98765432,
					PrivateKeyFile: "/etc/stagehand/secrets/github-app/private-key.pem"},
				WebhookSecretFile: "/etc/stagehand/secrets/webhook/secret",
				APITokenFile:      "/etc/stagehand/secrets/api-token/token",
				Listen:            ":8080", LocksStorage: "kubernetes", LocksNamespace: "rel", StateNamespace: "rel",
				Insecure: []string{"registry.internal:5000"}, MinPermission: "write"},
		},
		{
			name: "SSH key for git, GitHub App for check runs only",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{
					"config": map[string]any{
						"source": map[string]any{"url": "ssh://git@github.com/acme/manifests.git"},
						"github": map[string]any{"owner": "acme", "repo": "manifests"},
					},
					"secrets": map[string]any{
						"gitSSH":    map[string]any{"secretName": "ssh"},
						"githubApp": map[string]any{"secretName": "app", "appID": 7, "installationID": 9, "useForGit": false},
						"webhook":   map[string]any{"secretName": "hook"},
					},
				})}
			},
			want: fields{URL: "ssh://git@github.com/acme/manifests.git", Branch: "main", Root: ".", Interval: "1m0s",
				CacheDir:   "/var/cache/stagehand",
				SSHKeyFile: "/etc/stagehand/secrets/git-ssh/identity", KnownHosts: "/etc/stagehand/secrets/git-ssh/known_hosts",
				GitHubApp:         &config.GitHubApp{AppID: 7, InstallationID: 9, PrivateKeyFile: "/etc/stagehand/secrets/github-app/private-key.pem"},
				WebhookSecretFile: "/etc/stagehand/secrets/webhook/secret",
				Environments:      []string{}, Listen: ":8080", LocksStorage: "kubernetes", LocksNamespace: "rel",
				StateNamespace: "rel", MinPermission: "maintain"},
		},
		{
			name: "GitHub App for git and check runs",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{
					"config": map[string]any{
						"source": map[string]any{"url": "https://github.com/acme/manifests.git"},
						"github": map[string]any{"owner": "acme", "repo": "manifests"},
					},
					"secrets": map[string]any{
						"githubApp": map[string]any{"secretName": "app", "appID": 7, "installationID": 9},
						"webhook":   map[string]any{"secretName": "hook"},
					},
				})}
			},
			want: fields{URL: "https://github.com/acme/manifests.git", Branch: "main", Root: ".", Interval: "1m0s",
				CacheDir:          "/var/cache/stagehand",
				GitApp:            &config.GitHubApp{AppID: 7, InstallationID: 9, PrivateKeyFile: "/etc/stagehand/secrets/github-app/private-key.pem"},
				GitHubApp:         &config.GitHubApp{AppID: 7, InstallationID: 9, PrivateKeyFile: "/etc/stagehand/secrets/github-app/private-key.pem"},
				WebhookSecretFile: "/etc/stagehand/secrets/webhook/secret",
				Environments:      []string{}, Listen: ":8080", LocksStorage: "kubernetes", LocksNamespace: "rel",
				StateNamespace: "rel", MinPermission: "maintain"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "rel", tc.values(t)...)
			c, err := config.Parse(renderedConfig(t, objs))
			if err != nil {
				t.Fatalf("config.Parse(rendered reconciler.yaml): %v\n%s", err, renderedConfig(t, objs))
			}
			got := fields{URL: c.Source.URL, Branch: c.Source.Branch, Root: c.Source.Root,
				Interval: c.Source.Interval.String(), CacheDir: c.Source.CacheDir,
				TokenFile: c.Source.Auth.TokenFile, SSHKeyFile: c.Source.Auth.SSHKeyFile,
				KnownHosts: c.Source.Auth.KnownHostsFile, GitApp: c.Source.Auth.GitHubApp, Verify: c.Source.Verify,
				Environments: c.EnvironmentNames(), GitHubApp: c.GitHub.App,
				WebhookSecretFile: c.GitHub.WebhookSecretFile, APITokenFile: c.Server.APITokenFile,
				Listen: c.Server.Listen, LocksStorage: c.Locks.Storage, LocksNamespace: c.Locks.Namespace,
				StateNamespace: c.State.Namespace, Insecure: c.Registry.Insecure,
				MinPermission: c.GitHub.Approvers.MinPermission}
			for _, e := range c.Environments {
				got.Targets += len(e.Targets)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rendered config (-want +got):\n%s", diff)
			}

			// Every credential file the config names is in the mounted volume.
			d := find(t, objs, "Deployment", "rel", "sh-stagehand")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			mounted := projectedFiles(spec)
			if !mounted["/etc/stagehand/reconciler.yaml"] {
				t.Errorf("reconciler.yaml is not mounted at /etc/stagehand/reconciler.yaml; mounted: %v", mounted)
			}
			for _, f := range []string{got.TokenFile, got.SSHKeyFile, got.KnownHosts, got.WebhookSecretFile, got.APITokenFile} {
				if f != "" && !mounted[f] {
					t.Errorf("config names %s, which no volume provides; mounted: %v", f, mounted)
				}
			}
			for _, a := range []*config.GitHubApp{got.GitApp, got.GitHubApp} {
				if a != nil && !mounted[a.PrivateKeyFile] {
					t.Errorf("config names %s, which no volume provides", a.PrivateKeyFile)
				}
			}
			if got.Verify != nil && !mounted[got.Verify.KeyringFile] {
				t.Errorf("config names %s, which no volume provides", got.Verify.KeyringFile)
			}
			// Target kubeconfigs live in the kubeconfigs Secret's own volume.
			kubeDir := secretMount(spec, "kubeconfigs")
			for env, e := range c.Environments {
				for _, tg := range e.Targets {
					if tg.Kubeconfig != "" && (kubeDir == "" || path.Dir(tg.Kubeconfig) != kubeDir) {
						t.Errorf("environments.%s target %s: kubeconfig %s is not in the kubeconfigs volume (mounted at %q)",
							env, tg.Name, tg.Kubeconfig, kubeDir)
					}
				}
			}
		})
	}
}

// TestRejectedValues: values.schema.json and the chart's own checks make helm
// refuse a misspelt key or a combination the reconciler would refuse, before
// anything reaches the cluster.
func TestRejectedValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{name: "config key", values: map[string]any{"config": map[string]any{"source": map[string]any{"intervall": "5m"}}}, want: "intervall"},
		{name: "chart-owned config key", values: map[string]any{"config": map[string]any{"server": map[string]any{"listen": ":9090"}}}, want: "server"},
		{name: "top-level key", values: map[string]any{"replicas": 3}, want: "replicas"},
		{name: "bad duration", values: map[string]any{"config": map[string]any{"source": map[string]any{"interval": "soon"}}}, want: "interval"},
		{name: "bad permission", values: map[string]any{"config": map[string]any{"github": map[string]any{"approvers": map[string]any{"minPermission": "owner"}}}}, want: "minPermission"},
		{name: "two git credentials", values: map[string]any{"secrets": map[string]any{
			"gitToken": map[string]any{"secretName": "a"}, "githubApp": map[string]any{"secretName": "b", "appID": 1, "installationID": 2},
		}}, want: "give one git credential"},
		{name: "GitHub App without ids", values: map[string]any{"secrets": map[string]any{"githubApp": map[string]any{"secretName": "b"}}},
			want: "appID and installationID are required"},
		{name: "webhook without repository", values: map[string]any{"secrets": map[string]any{"webhook": map[string]any{"secretName": "w"}}},
			want: "config.github.owner and config.github.repo are required"},
		{name: "prbot without GitHub credentials", values: map[string]any{"prbot": map[string]any{"enabled": true}},
			want: "prbot's GitHub credentials"},
		{name: "prbot config key", values: map[string]any{"prbot": map[string]any{"config": map[string]any{"listen": ":9"}}}, want: "listen"},
		{name: "bad image digest", values: map[string]any{"image": map[string]any{"digest": "sha256:abc"}}, want: "digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helm(t).Template(t.Context(), chartDir(t), "sh", "rel", valuesFile(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// secretMount returns where the reconciler container mounts the volume name,
// "" when it does not.
func secretMount(podSpec map[string]any, name string) string {
	cs, _, _ := unstructured.NestedSlice(podSpec, "containers")
	for _, c := range cs {
		ms, _, _ := unstructured.NestedSlice(c.(map[string]any), "volumeMounts")
		for _, m := range ms {
			if n, _, _ := unstructured.NestedString(m.(map[string]any), "name"); n == name {
				p, _, _ := unstructured.NestedString(m.(map[string]any), "mountPath")
				return p
			}
		}
	}
	return ""
}
