package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// chartOwned are the reconciler.yaml fields the chart sets itself (from
// secrets, the release namespace and the pod layout); values may not set them.
var chartOwned = []string{
	"github.app.appID", "github.app.installationID", "github.app.privateKeyFile", "github.webhookSecretFile",
	"locks.namespace",
	"server.apiTokenFile", "server.listen", "registry.dockerConfigFile",
	// The web page's files come from secrets.uiOAuth and secrets.uiSession; no demo login (the chart listens on
	// :8080, not loopback).
	"server.ui.demoLogin", "server.ui.sessionKeyFile", "server.ui.oauth.clientIDFile", "server.ui.oauth.clientSecretFile",
	// secrets.tokens and rbac.kubernetesAuth set these (the latter with the RBAC it needs).
	"server.tokensFile", "server.kubernetesAuth",
	"source.auth.githubApp.appID", "source.auth.githubApp.installationID", "source.auth.githubApp.privateKeyFile",
	"source.auth.knownHostsFile", "source.auth.sshKeyFile", "source.auth.tokenFile",
	"source.caFile", "source.cacheDir", "source.verify.allowedSignersFile", "source.verify.keyringFile", "source.verify.mode",
	"state.context", "state.kubeconfig", "state.namespace",
}

// TestSchemaCoversConfig: every field of internal/config is either in the
// values schema under config or set by the chart, and the schema names no
// field the reconciler does not know. A field added to config.Config fails
// this test until the chart learns it.
func TestSchemaCoversConfig(t *testing.T) {
	schema := readSchema(t)
	cfg, _ := schema["properties"].(map[string]any)["config"].(map[string]any)
	got := append(schemaLeaves(cfg, ""), chartOwned...)
	sort.Strings(got)
	want := structLeaves(reflect.TypeFor[config.Config](), "")
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config fields (-internal/config +schema and chart-owned):\n%s", diff)
	}
}

// schemaLeaves lists the leaf paths of a JSON schema: a.b, a.*.c (maps),
// a[].b (arrays of objects).
func schemaLeaves(s map[string]any, prefix string) []string {
	join := func(p, k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	if items, ok := s["items"].(map[string]any); ok && items["type"] == "object" {
		return schemaLeaves(items, prefix+"[]")
	}
	var out []string
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			out = append(out, schemaLeaves(v.(map[string]any), join(prefix, k))...)
		}
		return out
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		if ap["type"] == "object" {
			return schemaLeaves(ap, join(prefix, "*"))
		}
		return []string{join(prefix, "*")} // a map of scalars, as structLeaves lists one
	}
	return []string{prefix}
}

// structLeaves lists the leaf JSON paths of a Go type the same way.
func structLeaves(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[config.Duration]():
		return []string{prefix}
	case t.Kind() == reflect.Map:
		return structLeaves(t.Elem(), prefix+".*")
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return structLeaves(t.Elem(), prefix+"[]")
	case t.Kind() != reflect.Struct:
		return []string{prefix}
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		out = append(out, structLeaves(f.Type, p)...)
	}
	return out
}

func readSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return schema
}
