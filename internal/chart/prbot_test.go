package chart

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/keyless"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestPrbotConfig loads the rendered prbot.yaml with prbot's own strict
// parser and checks that every file it names is mounted into prbot's pod,
// and that prbot gets no Kubernetes token.
func TestPrbotConfig(t *testing.T) {
	type fields struct {
		Owner, Repo, APIURL, TokenFile, WebhookSecretFile string
		App                                               *config.GitHubApp
		Base, Root, Listen, WebhookPath                   string
		Locks                                             *config.PrbotLocks
		MergeMethod                                       string
		Secrets                                           []string
		Token                                             bool
		AllowUnknownKeys                                  bool // from config.manifest, as the reconciler reads
	}
	tests := []struct {
		name   string
		values func(t *testing.T) []string
		want   fields
	}{
		{
			name:   "full values",
			values: func(t *testing.T) []string { return []string{fullValues(t)} },
			want: fields{Owner: "acme", Repo: "manifests", APIURL: "https://github.example.com/api/v3",
				WebhookSecretFile: "/etc/stagehand/secrets/prbot-webhook/secret",
				App: &config.GitHubApp{AppID: 123456, InstallationID: 98765432,
					PrivateKeyFile: "/etc/stagehand/secrets/github-app/private-key.pem"},
				Base: "main", Root: "deploy", Listen: ":8080", WebhookPath: "/prbot/webhook",
				Locks:       &config.PrbotLocks{Server: "http://sh-stagehand.rel.svc:80", TokenFile: "/etc/stagehand/secrets/api-token/token"},
				MergeMethod: "squash",
				Secrets:     []string{"stagehand-api", "stagehand-github-app", "stagehand-prbot-webhook"}},
		},
		{
			name: "token, shared webhook secret, no lock API",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{
					"config": map[string]any{"github": map[string]any{"owner": "acme", "repo": "manifests"},
						"manifest": map[string]any{"allowUnknownKeys": true}},
					"secrets": map[string]any{"webhook": map[string]any{"secretName": "hook"}},
					"prbot": map[string]any{"enabled": true, "secrets": map[string]any{
						"githubToken": map[string]any{"secretName": "bot-token"},
					}},
				})}
			},
			want: fields{Owner: "acme", Repo: "manifests", TokenFile: "/etc/stagehand/secrets/prbot-github-token/token",
				WebhookSecretFile: "/etc/stagehand/secrets/prbot-webhook/secret",
				Base:              "main", Root: ".", Listen: ":8080", WebhookPath: "/prbot/webhook", MergeMethod: "merge",
				Secrets: []string{"bot-token", "hook"}, AllowUnknownKeys: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "rel", tc.values(t)...)
			cm := find(t, objs, "ConfigMap", "rel", "sh-stagehand-prbot")
			raw, _, _ := unstructured.NestedString(cm.Object, "data", "prbot.yaml")
			c, err := config.ParsePrbot([]byte(raw))
			if err != nil {
				t.Fatalf("config.ParsePrbot(rendered prbot.yaml): %v\n%s", err, raw)
			}
			d := find(t, objs, "Deployment", "rel", "sh-stagehand-prbot")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			token, found, _ := unstructured.NestedBool(spec, "automountServiceAccountToken")
			got := fields{Owner: c.GitHub.Owner, Repo: c.GitHub.Repo, APIURL: c.GitHub.APIURL, TokenFile: c.GitHub.TokenFile,
				WebhookSecretFile: c.GitHub.WebhookSecretFile, App: c.GitHub.App, Base: c.Base, Root: c.Root,
				Listen: c.Listen, WebhookPath: c.WebhookPath, Locks: c.Locks, MergeMethod: c.Merge.Method,
				Secrets: projected(spec), Token: token || !found, AllowUnknownKeys: c.Manifest.AllowUnknownKeys}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("prbot (-want +got):\n%s", diff)
			}
			mounted := projectedFiles(spec)
			files := []string{"/etc/stagehand/prbot.yaml", c.GitHub.TokenFile, c.GitHub.WebhookSecretFile}
			if c.GitHub.App != nil {
				files = append(files, c.GitHub.App.PrivateKeyFile)
			}
			if c.Locks != nil {
				files = append(files, c.Locks.TokenFile)
			}
			for _, f := range files {
				if f != "" && !mounted[f] {
					t.Errorf("prbot.yaml names %s, which no volume of prbot's pod provides; mounted: %v", f, mounted)
				}
			}
		})
	}
}

// prbotChartOwned are the prbot.yaml fields the chart sets itself.
var prbotChartOwned = []string{
	"base", "github.apiURL", "github.app.appID", "github.app.installationID", "github.app.privateKeyFile",
	"github.owner", "github.repo", "github.tokenFile", "github.webhookSecretFile", "listen",
	"locks.server", "locks.tokenFile", "manifest.allowUnknownKeys", "root",
}

// TestSchemaCoversPrbotConfig: like TestSchemaCoversConfig, for prbot.yaml.
func TestSchemaCoversPrbotConfig(t *testing.T) {
	schema := readSchema(t)
	p := schema["properties"].(map[string]any)["prbot"].(map[string]any)["properties"].(map[string]any)["config"].(map[string]any)
	got := append(schemaLeaves(p, ""), prbotChartOwned...)
	sort.Strings(got)
	want := structLeaves(reflect.TypeFor[config.Prbot](), "")
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prbot config fields (-internal/prbot +schema and chart-owned):\n%s", diff)
	}
}

// TestPrbotAsDeployed runs prbot serve as the chart's prbot Deployment does:
// its arguments, and its config volume (rendered prbot.yaml plus the real
// GitHub App key and webhook Secrets) written out as the kubelet would. With
// the OpenAPI-validated GitHub server as the API, it authenticates as the App,
// opens the due promotion, answers /healthz, and verifies webhooks with the
// mounted secret.
func TestPrbotAsDeployed(t *testing.T) {
	env := cluster.Env(t)
	bin := build(t, "prbot")
	ctx := t.Context()
	rel := env.Namespace(t)
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	gh.Repo("acme", "manifests").Commit("main", map[string]string{
		"pipeline.yaml":                      "stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    requires: {healthy: false}\n",
		"environments/devel/manifest.json":   `{"services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}` + "\n",
		"environments/staging/manifest.json": "{\n  \"services\": [\n    {\"name\": \"web\", \"containers\": [{\"dockerTag\": \"1.0.0\"}]}\n  ]\n}\n",
	}, "seed")
	hookSecret := randomHex(t)
	for name, data := range map[string]map[string][]byte{
		"stagehand-github-app": {"private-key.pem": gh.App().PrivateKeyPEM()},
		"stagehand-webhook":    {"secret": []byte(hookSecret)},
	} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
		if _, err := env.Clientset.CoreV1().Secrets(rel).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objs := render(t, rel, valuesFile(t, map[string]any{
		"config": map[string]any{"github": map[string]any{"apiURL": gh.URL(), "owner": "acme", "repo": "manifests"}},
		"secrets": map[string]any{
			"githubApp": map[string]any{"secretName": "stagehand-github-app", "appID": gh.App().ID(), "installationID": gh.App().InstallationID()},
			"webhook":   map[string]any{"secretName": "stagehand-webhook"},
		},
		"prbot": map[string]any{"enabled": true, "config": map[string]any{"resync": "0s"}},
	}))
	d := find(t, objs, "Deployment", rel, "sh-stagehand-prbot")
	dir := t.TempDir()
	materialize(t, objs, d, rel, dir)
	addr := testenv.FreeAddr(t)
	cfgPath := filepath.Join(dir, "prbot.yaml")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(string(raw), "/etc/stagehand/", dir+"/")), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["listen"] = addr
	local, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, local, 0o600); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	c := spec["containers"].([]any)[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "/etc/stagehand/", dir+"/")
	}

	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	p := startProcess(t, "prbot serve", cmd)
	deadline := time.Now().Add(60 * time.Second)
	for len(gh.Repo("acme", "manifests").PullRequests()) == 0 || status(addr, "/healthz") != http.StatusOK {
		select {
		case <-p.exited:
			t.Fatalf("prbot serve exited early: %v\n%s", p.err, p.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d pull requests, /healthz %d\n%s", len(gh.Repo("acme", "manifests").PullRequests()), status(addr, "/healthz"), p.out.String())
		}
	}
	if gh.App().TokensIssued() == 0 {
		t.Error("no installation token was issued: prbot did not use the mounted App key")
	}
	hook := "http://" + addr + "/prbot/webhook"
	push := gh.Webhooks("acme", "manifests").Push("main", strings.Repeat("0", 40), gh.Repo("acme", "manifests").Branch("main"), "someone")
	if code, _, err := githubtest.Send(ctx, hook, "wrong", push); err != nil || code != http.StatusUnauthorized {
		t.Errorf("push with a wrong signature to %s: %d, %v; want 401", hook, code, err)
	}
	if code, body, err := githubtest.Send(ctx, hook, hookSecret, push); err != nil || code != http.StatusOK {
		t.Errorf("push signed with the mounted secret to %s: %d %s, %v; want 200", hook, code, body, err)
	}
	p.stop(t)
}

// TestPrbotBumpAPI: with prbot.config.oidc the rendered prbot.yaml turns the
// keyless bump API on and the Ingress routes /api/v1/bumps to prbot (not to
// the reconciler's /api/v1); without it neither happens.
func TestPrbotBumpAPI(t *testing.T) {
	bumpsBackend := func(objs []*unstructured.Unstructured) string {
		ing := find(t, objs, "Ingress", "rel", "sh-stagehand")
		rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
		for _, r := range rules {
			paths, _, _ := unstructured.NestedSlice(r.(map[string]any), "http", "paths")
			for _, p := range paths {
				if p.(map[string]any)["path"] == keyless.BumpsPath {
					name, _, _ := unstructured.NestedString(p.(map[string]any), "backend", "service", "name")
					return name
				}
			}
		}
		return ""
	}
	prbotYAML := func(objs []*unstructured.Unstructured) *config.Prbot {
		raw, _, _ := unstructured.NestedString(find(t, objs, "ConfigMap", "rel", "sh-stagehand-prbot").Object, "data", "prbot.yaml")
		c, err := config.ParsePrbot([]byte(raw))
		if err != nil {
			t.Fatalf("config.ParsePrbot(rendered prbot.yaml): %v\n%s", err, raw)
		}
		return c
	}

	objs := render(t, "rel", fullValues(t))
	if c := prbotYAML(objs); c.OIDC != nil {
		t.Errorf("prbot.yaml without prbot.config.oidc has oidc %+v", c.OIDC)
	}
	if b := bumpsBackend(objs); b != "" {
		t.Errorf("without oidc the Ingress routes %s to %s", keyless.BumpsPath, b)
	}

	issuer := map[string]any{"url": "https://token.actions.githubusercontent.com", "audience": "stagehand", "claims": "github"}
	objs = render(t, "rel", fullValues(t), valuesFile(t, map[string]any{"prbot": map[string]any{"config": map[string]any{"oidc": map[string]any{"issuers": []any{issuer}}}}}))
	if c := prbotYAML(objs); c.OIDC == nil || len(c.OIDC.Issuers) != 1 || c.OIDC.Issuers[0].URL != "https://token.actions.githubusercontent.com" {
		t.Errorf("prbot.yaml oidc = %+v, want the issuer", c.OIDC)
	}
	if b := bumpsBackend(objs); b != "sh-stagehand-prbot" {
		t.Errorf("the Ingress routes %s to %q, want prbot's Service", keyless.BumpsPath, b)
	}
}
