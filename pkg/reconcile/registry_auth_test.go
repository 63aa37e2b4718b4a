package reconcile_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestPlanInsecureRegistry reaches the test registry under a name that is
// not loopback (go-containerregistry speaks plain HTTP to loopback on its
// own): only when the host is listed as insecure does the plan use HTTP.
func TestPlanInsecureRegistry(t *testing.T) {
	env := cluster.Env(t)
	reg := registrytest.New(t)
	d := reg.Push(t, "team/app", "2")
	_, port, err := net.SplitHostPort(reg.Host())
	if err != nil {
		t.Fatal(err)
	}
	host := "registry.internal:" + port
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, reg.Host())
	}
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "app", "app", 0, pod{containers: [][2]string{{"app", host + "/team/app:1"}}})
	req := reconcile.Request{Environment: environment(svc("app", [3]string{"team/app", "2", ""})), Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}
	tests := []struct {
		name     string
		insecure []string
		want     string // the change's To, or the start of the problem
	}{
		{"listed as insecure", []string{host}, host + "/team/app:2@" + d},
		{"another host listed", []string{"other.internal:" + port}, "cannot pin a digest for " + host + "/team/app:2: "},
		{"none listed", nil, "cannot pin a digest for " + host + "/team/app:2: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReconciler(t, reconcile.WithPinDigests(true), reconcile.WithRegistryTransport(tr), reconcile.WithInsecureRegistries(tt.insecure...))
			got := onlyOutcome(t, mustPlan(t, r, req))
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want %q…", got, tt.want)
			}
		})
	}
}

// TestPlanRegistryCredentials resolves digests in a registry that requires
// basic auth, with the credentials of the docker config ($DOCKER_CONFIG),
// the default keychain the reconciler binary uses.
func TestPlanRegistryCredentials(t *testing.T) {
	env := cluster.Env(t)
	reg := registrytest.New(t, registrytest.WithBasicAuth("ci", "s3cret"))
	d := reg.Push(t, "team/app", "2")
	ns := env.Namespace(t)
	createDeployment(t, env.Clientset, ns, "app", "app", 0, pod{containers: [][2]string{{"app", reg.Host() + "/team/app:1"}}})
	req := reconcile.Request{Environment: environment(svc("app", [3]string{"team/app", "2", d})), Revision: "r", Targets: []reconcile.Target{target(t, "a", ns)}}

	dockerConfig := func(auths string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {`+auths+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	tests := []struct {
		name, auths, want string
	}{
		{"credentials for the registry", `"` + reg.Host() + `": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("ci:s3cret")) + `"}`, reg.Host() + "/team/app:2@" + d},
		{"wrong password", `"` + reg.Host() + `": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("ci:nope")) + `"}`, "cannot verify dockerDigest " + d + " of " + reg.Host() + "/team/app:2: resolving " + reg.Host() + "/team/app:2: registry " + reg.Host() + " answered 401 Unauthorized to a request made as user \"ci\": GET "},
		{"no credentials", "", "cannot verify dockerDigest " + d + " of " + reg.Host() + "/team/app:2: resolving " + reg.Host() + "/team/app:2: registry " + reg.Host() + " answered 401 Unauthorized to a request made anonymously: GET "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DOCKER_CONFIG", dockerConfig(tt.auths))
			t.Setenv("HOME", t.TempDir()) // no ~/.docker/config.json of the machine
			r := newReconciler(t, reconcile.WithVerifyDigests(true), reconcile.WithPinDigests(true))
			got := onlyOutcome(t, mustPlan(t, r, req))
			if !strings.HasPrefix(got, tt.want) || (got != tt.want && !strings.Contains(got, "UNAUTHORIZED")) {
				t.Errorf("got %q, want %q… (a failure saying UNAUTHORIZED)", got, tt.want)
			}
		})
	}
}

// onlyOutcome returns the To of the plan's one change or the message of its
// one problem; the plan must have exactly one of them.
func onlyOutcome(t *testing.T, p *reconcile.Plan) string {
	t.Helper()
	switch {
	case len(p.Changes) == 1 && len(p.Problems) == 0:
		return p.Changes[0].To
	case len(p.Problems) == 1 && len(p.Changes) == 0:
		return p.Problems[0].Message
	}
	t.Fatalf("changes %v, problems %v; want one change or one problem", p.Changes, p.Problems)
	return ""
}
