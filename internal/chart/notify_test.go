package chart

import (
	"path"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// TestNotificationSecrets: config.notifications passes through to
// reconciler.yaml, and the files it names are in the Secret the chart
// mounts from secrets.notifications.
func TestNotificationSecrets(t *testing.T) {
	dir := "/var/run/stagehand/notifications"
	objs := render(t, "rel", valuesFile(t, map[string]any{
		"config": map[string]any{
			"source":       map[string]any{"url": "https://github.com/acme/manifests.git"},
			"environments": map[string]any{"prod": map[string]any{"targets": []any{map[string]any{"name": "a", "namespace": "apps"}}}},
			"notifications": []any{
				map[string]any{"name": "chat", "type": "slack", "urlFile": dir + "/slack-url", "environments": []any{"prod"}, "events": []any{"deploy.failed"}},
				map[string]any{"name": "hook", "type": "webhook", "urlFile": dir + "/hook-url", "secretFile": dir + "/hook-key"},
			},
		},
		"secrets": map[string]any{"notifications": map[string]any{"secretName": "stagehand-notify"}},
	}))
	c, err := config.Parse(renderedConfig(t, objs))
	if err != nil {
		t.Fatalf("config.Parse(rendered reconciler.yaml): %v", err)
	}
	want := []config.Notification{
		{Name: "chat", Type: "slack", URLFile: dir + "/slack-url", Environments: []string{"prod"}, Events: []string{"deploy.failed"}},
		{Name: "hook", Type: "webhook", URLFile: dir + "/hook-url", SecretFile: dir + "/hook-key"},
	}
	if diff := cmp.Diff(want, c.Notifications); diff != "" {
		t.Errorf("rendered notifications (-want +got):\n%s", diff)
	}
	d := find(t, objs, "Deployment", "rel", "sh-stagehand")
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	mounted := secretMount(spec, "notifications")
	for _, n := range c.Notifications {
		for _, f := range []string{n.URLFile, n.SecretFile} {
			if f != "" && path.Dir(f) != mounted {
				t.Errorf("%s is not in the notifications Secret's volume (mounted at %q)", f, mounted)
			}
		}
	}
	vols, _, _ := unstructured.NestedSlice(spec, "volumes")
	var secret string
	for _, v := range vols {
		if name, _, _ := unstructured.NestedString(v.(map[string]any), "name"); name == "notifications" {
			secret, _, _ = unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		}
	}
	if secret != "stagehand-notify" {
		t.Errorf("notifications volume from Secret %q, want stagehand-notify", secret)
	}

	// Without the Secret, no such volume.
	objs = render(t, "rel", valuesFile(t, map[string]any{"config": map[string]any{"source": map[string]any{"url": "https://github.com/acme/manifests.git"}}}))
	d = find(t, objs, "Deployment", "rel", "sh-stagehand")
	spec, _, _ = unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if m := secretMount(spec, "notifications"); m != "" {
		t.Errorf("notifications mounted at %s without secrets.notifications", m)
	}
}
