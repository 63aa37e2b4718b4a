package wire_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestPrivateRegistryFromConfig plans through what `reconciler run` builds
// from reconciler.yaml (wire.Reconciler and Clients.Targets): with the
// defaults, the registry's credentials in the workload ServiceAccount's
// imagePullSecret pin the digest; with registry.workloadCredentials false
// they are not read, and registry.dockerConfigFile is what reaches it.
func TestPrivateRegistryFromConfig(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // nothing from this machine's docker config
	t.Setenv("HOME", t.TempDir())
	one := cluster.Env(t)
	ctx := t.Context()
	reg := registrytest.New(t, registrytest.WithBasicAuth("puller", "s3cret"))
	digest := reg.Push(t, "team/web", "2")
	auths := fmt.Sprintf(`{"auths":{%q:{"username":"puller","password":"s3cret","auth":%q}}}`,
		reg.Host(), base64.StdEncoding.EncodeToString([]byte("puller:s3cret")))

	ns := one.Namespace(t)
	if _, err := one.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{corev1.DockerConfigJsonKey: auths}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := webDeployment(ns)
	d.Spec.Template.Spec.ServiceAccountName = "web"
	d.Spec.Template.Spec.Containers[0].Image = reg.Host() + "/team/web:1"
	if _, err := one.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(auths), 0o600); err != nil {
		t.Fatal(err)
	}

	no := false
	tests := []struct {
		name string
		reg  config.Registry
		want string // the change's To, or the start of the problem
	}{
		{"defaults: the workload's pull secret", config.Registry{}, reg.Host() + "/team/web:2@" + digest},
		{"workloadCredentials false", config.Registry{WorkloadCredentials: &no},
			"cannot pin a digest for " + reg.Host() + "/team/web:2: resolving " + reg.Host() + "/team/web:2: registry " + reg.Host() + " answered 401 Unauthorized to a request made anonymously"},
		{"workloadCredentials false, dockerConfigFile", config.Registry{WorkloadCredentials: &no, DockerConfigFile: file}, reg.Host() + "/team/web:2@" + digest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{
				Registry:     tt.reg,
				State:        config.State{Kubeconfig: one.Kubeconfig},
				Environments: map[string]config.Environment{"prod": {Targets: []config.Target{{Name: "a", Namespace: ns, Kubeconfig: one.Kubeconfig}}}},
			}
			cfg.Default()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			r, err := wire.Reconciler(cfg)
			if err != nil {
				t.Fatal(err)
			}
			clients := newClients(t)
			t.Cleanup(clients.Close)
			targets, err := clients.Targets(cfg, "prod", nil)
			if err != nil {
				t.Fatal(err)
			}
			e := &manifest.Environment{Name: "prod", Root: "environments/prod/manifest.json", Services: []manifest.Service{
				{Name: "web", Containers: []manifest.Container{{DockerName: "team/web", DockerTag: "2"}}}}}
			p, err := r.Plan(ctx, reconcile.Request{Environment: e, Revision: "r", Targets: targets})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			switch {
			case len(p.Changes) == 1 && len(p.Problems) == 0:
				got = p.Changes[0].To
			case len(p.Problems) == 1 && len(p.Changes) == 0:
				got = p.Problems[0].Message
			default:
				t.Fatalf("changes %v, problems %v", p.Changes, p.Problems)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want %q…", got, tt.want)
			}
		})
	}
}
