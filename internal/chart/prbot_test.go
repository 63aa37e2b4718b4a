package chart

import (
	"reflect"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
)

// TestPrbotConfig loads the rendered prbot.yaml with prbot's own strict
// parser and checks that every file it names is mounted into prbot's pod,
// and that prbot gets no Kubernetes token.
func TestPrbotConfig(t *testing.T) {
	type fields struct {
		Owner, Repo, APIURL, TokenFile, WebhookSecretFile string
		App                                               *config.GitHubApp
		Base, Root, Listen, WebhookPath                   string
		Locks                                             *prbot.LocksConfig
		MergeMethod                                       string
		Secrets                                           []string
		Token                                             bool
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
				Locks:       &prbot.LocksConfig{Server: "http://sh-stagehand.rel.svc:80", TokenFile: "/etc/stagehand/secrets/api-token/token"},
				MergeMethod: "squash",
				Secrets:     []string{"stagehand-api", "stagehand-github-app", "stagehand-prbot-webhook"}},
		},
		{
			name: "token, shared webhook secret, no lock API",
			values: func(t *testing.T) []string {
				return []string{valuesFile(t, map[string]any{
					"config":  map[string]any{"github": map[string]any{"owner": "acme", "repo": "manifests"}},
					"secrets": map[string]any{"webhook": map[string]any{"secretName": "hook"}},
					"prbot": map[string]any{"enabled": true, "secrets": map[string]any{
						"githubToken": map[string]any{"secretName": "bot-token"},
					}},
				})}
			},
			want: fields{Owner: "acme", Repo: "manifests", TokenFile: "/etc/stagehand/secrets/prbot-github-token/token",
				WebhookSecretFile: "/etc/stagehand/secrets/prbot-webhook/secret",
				Base:              "main", Root: ".", Listen: ":8080", WebhookPath: "/prbot/webhook", MergeMethod: "merge",
				Secrets: []string{"bot-token", "hook"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "rel", tc.values(t)...)
			cm := find(t, objs, "ConfigMap", "rel", "sh-stagehand-prbot")
			raw, _, _ := unstructured.NestedString(cm.Object, "data", "prbot.yaml")
			c, err := prbot.ParseConfig([]byte(raw))
			if err != nil {
				t.Fatalf("prbot.ParseConfig(rendered prbot.yaml): %v\n%s", err, raw)
			}
			d := find(t, objs, "Deployment", "rel", "sh-stagehand-prbot")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			token, found, _ := unstructured.NestedBool(spec, "automountServiceAccountToken")
			got := fields{Owner: c.GitHub.Owner, Repo: c.GitHub.Repo, APIURL: c.GitHub.APIURL, TokenFile: c.GitHub.TokenFile,
				WebhookSecretFile: c.GitHub.WebhookSecretFile, App: c.GitHub.App, Base: c.Base, Root: c.Root,
				Listen: c.Listen, WebhookPath: c.WebhookPath, Locks: c.Locks, MergeMethod: c.Merge.Method,
				Secrets: projected(spec), Token: token || !found}
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
	"locks.server", "locks.tokenFile", "root",
}

// TestSchemaCoversPrbotConfig: like TestSchemaCoversConfig, for prbot.yaml.
func TestSchemaCoversPrbotConfig(t *testing.T) {
	schema := readSchema(t)
	p := schema["properties"].(map[string]any)["prbot"].(map[string]any)["properties"].(map[string]any)["config"].(map[string]any)
	got := append(schemaLeaves(p, ""), prbotChartOwned...)
	sort.Strings(got)
	want := structLeaves(reflect.TypeFor[prbot.Config](), "")
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prbot config fields (-internal/prbot +schema and chart-owned):\n%s", diff)
	}
}
