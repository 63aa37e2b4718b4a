package chart

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// TestConfigUI: secrets.uiOAuth and secrets.uiSession are mounted and named
// in server.ui; config.server.ui's own keys pass through.
func TestConfigUI(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   config.UI
	}{
		{name: "defaults", values: map[string]any{}, want: config.UI{Enabled: new(true)}},
		{name: "off", values: map[string]any{"config": map[string]any{"server": map[string]any{"ui": map[string]any{"enabled": false}}}},
			want: config.UI{Enabled: &off}},
		{name: "GitHub sign-in", values: map[string]any{
			"config": map[string]any{
				"github": map[string]any{"owner": "acme", "repo": "manifests"},
				"server": map[string]any{"ui": map[string]any{"oauth": map[string]any{"webURL": "https://github.example.com"}}},
			},
			"secrets": map[string]any{
				"githubApp": map[string]any{"secretName": "app", "appID": 7, "installationID": 9},
				"webhook":   map[string]any{"secretName": "hook"},
				"uiOAuth":   map[string]any{"secretName": "oauth"},
				"uiSession": map[string]any{"secretName": "session"},
			}},
			want: config.UI{Enabled: new(true), SessionKeyFile: "/etc/stagehand/secrets/ui-session/key", OAuth: config.UIOAuth{
				ClientIDFile: "/etc/stagehand/secrets/ui-oauth/client-id", ClientSecretFile: "/etc/stagehand/secrets/ui-oauth/client-secret",
				WebURL: "https://github.example.com"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "rel", valuesFile(t, tc.values))
			c, err := config.Parse(renderedConfig(t, objs))
			if err != nil {
				t.Fatalf("config.Parse(rendered reconciler.yaml): %v\n%s", err, renderedConfig(t, objs))
			}
			if diff := cmp.Diff(tc.want, c.Server.UI); diff != "" {
				t.Errorf("server.ui (-want +got):\n%s", diff)
			}
			d := find(t, objs, "Deployment", "rel", "sh-stagehand")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			mounted := projectedFiles(spec)
			for _, f := range []string{c.Server.UI.SessionKeyFile, c.Server.UI.OAuth.ClientIDFile, c.Server.UI.OAuth.ClientSecretFile} {
				if f != "" && !mounted[f] {
					t.Errorf("server.ui names %s, which no volume provides; mounted: %v", f, mounted)
				}
			}
		})
	}
}
