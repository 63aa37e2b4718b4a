package chart

import (
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

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
		CAFile                                string
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
		DockerConfigFile                      string
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
				CacheDir:  "/var/cache/stagehand",
				CAFile:    "/etc/stagehand/secrets/git-ca/ca.crt",
				TokenFile: "/etc/stagehand/secrets/git-token/token",
				Verify: &config.Verify{Mode: "head", KeyringFile: "/etc/stagehand/secrets/gpg-keyring/keyring",
					AllowedSignersFile: "/etc/stagehand/secrets/ssh-allowed-signers/allowed_signers"},
				Environments: []string{"devel", "prod"}, Targets: 5,
				GitHubApp: &config.GitHubApp{AppID: 123456, InstallationID: 98765432,
					PrivateKeyFile: "/etc/stagehand/secrets/github-app/private-key.pem"},
				WebhookSecretFile: "/etc/stagehand/secrets/webhook/secret",
				APITokenFile:      "/etc/stagehand/secrets/api-token/token",
				Listen:            ":8080", LocksStorage: "kubernetes", LocksNamespace: "rel", StateNamespace: "rel",
				Insecure: []string{"registry.internal:5000"}, MinPermission: "write",
				DockerConfigFile: "/etc/stagehand/secrets/registry/config.json"},
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
				Interval: c.Source.Interval.String(), CacheDir: c.Source.CacheDir, CAFile: c.Source.CAFile,
				TokenFile: c.Source.Auth.TokenFile, SSHKeyFile: c.Source.Auth.SSHKeyFile,
				KnownHosts: c.Source.Auth.KnownHostsFile, GitApp: c.Source.Auth.GitHubApp, Verify: c.Source.Verify,
				Environments: c.EnvironmentNames(), GitHubApp: c.GitHub.App,
				WebhookSecretFile: c.GitHub.WebhookSecretFile, APITokenFile: c.Server.APITokenFile,
				Listen: c.Server.Listen, LocksStorage: c.Locks.Storage, LocksNamespace: c.Locks.Namespace,
				StateNamespace: c.State.Namespace, Insecure: c.Registry.Insecure,
				MinPermission: c.GitHub.Approvers.MinPermission, DockerConfigFile: c.Registry.DockerConfigFile}
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
			for _, f := range []string{got.CAFile, got.TokenFile, got.SSHKeyFile, got.KnownHosts, got.WebhookSecretFile, got.APITokenFile, got.DockerConfigFile} {
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
		{name: "two prbot replicas (each would accept a keyless bump's token once)", values: map[string]any{"prbot": map[string]any{"replicaCount": 2}}, want: "replicaCount"},
		{name: "chart-owned registry key", values: map[string]any{"config": map[string]any{"registry": map[string]any{"dockerConfigFile": "/x"}}}, want: "dockerConfigFile"},
		{name: "negative registry rate limit", values: map[string]any{"config": map[string]any{"registry": map[string]any{"rateLimit": -1}}}, want: "rateLimit"},
		{name: "bad digest cache TTL", values: map[string]any{"config": map[string]any{"registry": map[string]any{"digestCacheTTL": "a while"}}}, want: "digestCacheTTL"},
		{name: "verification address that is a name", values: map[string]any{"config": map[string]any{"verification": map[string]any{"allowAddresses": []any{"localhost"}}}}, want: "allowAddresses"},
		{name: "Kubernetes user acting for a bare name", values: map[string]any{"rbac": map[string]any{"kubernetesAuth": true},
			"config": map[string]any{"server": map[string]any{"kubernetesActsFor": map[string]any{"system:serviceaccount:ci:alice-bot": "alice"}}}},
			want: "kubernetesActsFor"},
		{name: "Kubernetes user acting for a token", values: map[string]any{"rbac": map[string]any{"kubernetesAuth": true},
			"config": map[string]any{"server": map[string]any{"kubernetesActsFor": map[string]any{"system:serviceaccount:ci:alice-bot": "token:alice-cli"}}}},
			want: "kubernetesActsFor"},
		{name: "Kubernetes user named with its kind", values: map[string]any{"rbac": map[string]any{"kubernetesAuth": true},
			"config": map[string]any{"server": map[string]any{"kubernetesActsFor": map[string]any{"kubernetes:system:serviceaccount:ci:alice-bot": "github:alice"}}}},
			want: "invalid propertyName 'kubernetes:system:serviceaccount:ci:alice-bot'"},
		{name: "Kubernetes user acting for someone without kubernetesAuth", values: map[string]any{
			"config": map[string]any{"server": map[string]any{"kubernetesActsFor": map[string]any{"system:serviceaccount:ci:alice-bot": "github:alice"}}}},
			want: "config.server.kubernetesActsFor needs rbac.kubernetesAuth: true"},
		{name: "bad image digest", values: map[string]any{"image": map[string]any{"digest": "sha256:abc"}}, want: "digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helm(t).Template(t.Context(), Release{Dir: chartDir(t), Name: "sh", Namespace: "rel"}, valuesFile(t, tc.values))
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

// TestKubernetesIdentityConfig: config.server.kubernetesActsFor and kubernetesAudience reach reconciler.yaml
// as the reconciler reads them.
func TestKubernetesIdentityConfig(t *testing.T) {
	actsFor := map[string]string{"system:serviceaccount:ci:alice-bot": "github:alice"}
	objs := render(t, "rel", valuesFile(t, map[string]any{"rbac": map[string]any{"kubernetesAuth": true},
		"config": map[string]any{"server": map[string]any{"kubernetesAudience": "stagehand-prod",
			"kubernetesActsFor": map[string]any{"system:serviceaccount:ci:alice-bot": "github:alice"}}}}))
	c, err := config.Parse(renderedConfig(t, objs))
	if err != nil {
		t.Fatalf("config.Parse(rendered reconciler.yaml): %v\n%s", err, renderedConfig(t, objs))
	}
	want := config.Server{KubernetesAuth: true, KubernetesAudience: "stagehand-prod", KubernetesActsFor: actsFor}
	got := config.Server{KubernetesAuth: c.Server.KubernetesAuth, KubernetesAudience: c.Server.KubernetesAudience, KubernetesActsFor: c.Server.KubernetesActsFor}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered server (-want +got):\n%s", diff)
	}
}
