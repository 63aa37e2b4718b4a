package wire

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

func writeDockerConfig(t *testing.T, path, host, user, password string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	b := fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, host, user, password, auth)
	if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDockerConfigFileRotates: the file is read on every resolution, so a
// rotated Secret mounted as the file is used without a restart; other
// registries get no credentials from it.
func TestDockerConfigFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	writeDockerConfig(t, path, "registry.acme.com", "ci", "one")
	kc := dockerConfigFile(path)
	user := func(ref string) string {
		t.Helper()
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kc.Resolve(r.Context())
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Username + ":" + cfg.Password
	}
	if got := user("registry.acme.com/team/app:1"); got != "ci:one" {
		t.Errorf("credentials %q, want ci:one", got)
	}
	if got := user("other.example.com/team/app:1"); got != ":" {
		t.Errorf("another registry got credentials %q", got)
	}
	writeDockerConfig(t, path, "registry.acme.com", "ci", "two")
	if got := user("registry.acme.com/team/app:1"); got != "ci:two" {
		t.Errorf("after rotation: credentials %q, want ci:two", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Resolve(name.MustParseReference("registry.acme.com/team/app:1").Context()); err == nil || !strings.Contains(err.Error(), "registry.dockerConfigFile: reading docker config") {
		t.Errorf("file gone: error %v, want one naming registry.dockerConfigFile", err)
	}
	var _ authn.Keychain = kc
}

func TestReconcilerRegistryErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"auths": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rate := -1.0
	for _, tt := range []struct {
		name string
		reg  config.Registry
		want string
	}{
		{"missing file", config.Registry{DockerConfigFile: filepath.Join(dir, "nope.json")}, "registry.dockerConfigFile: reading docker config: open " + filepath.Join(dir, "nope.json")},
		{"not JSON", config.Registry{DockerConfigFile: bad}, "registry.dockerConfigFile: parsing docker config " + bad},
		{"no auths", config.Registry{DockerConfigFile: empty}, "registry.dockerConfigFile: docker config " + empty + ` has no "auths"`},
		{"negative rate", config.Registry{RateLimit: &rate}, "setting registry rate limit: -1 requests a second is negative"},
		{"negative ttl", config.Registry{DigestCacheTTL: &config.Duration{Duration: -time.Second}}, "setting digest cache TTL: -1s is negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Reconciler(defaulted(tt.reg))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	good := filepath.Join(dir, "good.json")
	writeDockerConfig(t, good, "registry.acme.com", "ci", "x")
	no := false
	for _, reg := range []config.Registry{{DockerConfigFile: good}, {DockerConfigFile: good, WorkloadCredentials: &no}} {
		if _, err := Reconciler(defaulted(reg)); err != nil {
			t.Errorf("Reconciler(%+v): %v", reg, err)
		}
	}
}

// defaulted is a configuration with reg and every other default.
func defaulted(reg config.Registry) *config.Config {
	c := &config.Config{Registry: reg}
	c.Default()
	return c
}
