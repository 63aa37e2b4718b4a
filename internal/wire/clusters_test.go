package wire_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// serviceAccountToken creates ServiceAccount sa in namespace ns of c, with
// what the reconciler does to workloads allowed when grant is set, and
// returns a token for it.
func serviceAccountToken(t *testing.T, c kubernetes.Interface, ns, sa string, grant bool) string {
	t.Helper()
	ctx := t.Context()
	mustCreate(t, func() error {
		_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		return err
	})
	if grant {
		mustCreate(t, func() error {
			_, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			}}, metav1.CreateOptions{})
			return err
		})
		mustCreate(t, func() error {
			_, err := c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
			return err
		})
	}
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s: %v", sa, err)
	}
	return tr.Status.Token
}

func mustCreate(t *testing.T, fn func() error) {
	t.Helper()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
}

// argoSecret is an Argo CD cluster Secret for server with token.
func argoSecret(t *testing.T, name, server string, ca []byte, token string) *corev1.Secret {
	t.Helper()
	cfg, err := json.Marshal(map[string]any{"bearerToken": token, "tlsClientConfig": map[string]any{"insecure": false, "caData": base64.StdEncoding.EncodeToString(ca)}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": "second", "server": server, "config": string(cfg)},
	}
}

// kubeconfigSecret is a Secret holding a kubeconfig for server with token.
func kubeconfigSecret(t *testing.T, name, server string, ca []byte, token string) *corev1.Secret {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["second"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["stagehand"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["second"] = &clientcmdapi.Context{Cluster: "second", AuthInfo: "stagehand"}
	kc.CurrentContext = "second"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"kubeconfig": b}}
}

func webDeployment(ns string) *appsv1.Deployment {
	d := testenv.Deployment("web", "registry.example.com/web:1")
	d.Namespace = ns
	d.Spec.Replicas = new(int32) // zero: only the pod template is planned and patched
	return d
}

// TestTargetsOnTwoClusters: one environment spans two API servers, the
// second reached through an Argo CD cluster Secret and a kubeconfig Secret
// in the reconciler's namespace of the first. A plan and an apply reach
// both. Then the token in the Argo CD Secret is rotated (the old one
// revoked): the next pass, through the same targets and clients, uses the
// new token.
func TestTargetsOnTwoClusters(t *testing.T) {
	one := cluster.Env(t)
	two, err := testenv.Start(context.Background())
	if err != nil {
		t.Fatalf("starting the second control plane: %v", err)
	}
	t.Cleanup(two.Stop)
	rel, nsA, nsB := one.Namespace(t), one.Namespace(t), two.Namespace(t)
	ctx := t.Context()
	for _, d := range []struct {
		c  kubernetes.Interface
		ns string
	}{{one.Clientset, nsA}, {two.Clientset, nsB}} {
		if _, err := d.c.AppsV1().Deployments(d.ns).Create(ctx, webDeployment(d.ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tokenA := serviceAccountToken(t, two.Clientset, nsB, "deployer-a", true)
	tokenB := serviceAccountToken(t, two.Clientset, nsB, "deployer-b", true)
	tokenNobody := serviceAccountToken(t, two.Clientset, nsB, "nobody", false)
	ca := two.Config.CAData
	for _, s := range []*corev1.Secret{argoSecret(t, "cluster-two", two.Config.Host, ca, tokenA), kubeconfigSecret(t, "kubeconfig-two", two.Config.Host, ca, tokenB)} {
		if _, err := one.Clientset.CoreV1().Secrets(rel).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	cfg := &config.Config{
		State: config.State{Namespace: rel, Kubeconfig: one.Kubeconfig},
		Environments: map[string]config.Environment{"prod": {Targets: []config.Target{
			{Name: "one", Namespace: nsA, Kubeconfig: one.Kubeconfig},
			{Name: "two-argo", Namespace: nsB, ClusterSecret: "cluster-two"},
			{Name: "two-kubeconfig", Namespace: nsB, KubeconfigSecret: &config.SecretKey{Name: "kubeconfig-two"}},
		}}},
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	clients := newClients(t)
	t.Cleanup(clients.Close)
	targets, err := clients.Targets(cfg, "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconcile.New(reconcile.WithRolloutTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	req := func(tag string, only ...string) reconcile.Request {
		var ts []reconcile.Target
		for _, tg := range targets {
			if len(only) == 0 || tg.Name == only[0] {
				ts = append(ts, tg)
			}
		}
		e := &manifest.Environment{Name: "prod", Root: "environments/prod/manifest.json", Services: []manifest.Service{
			{Name: "web", Containers: []manifest.Container{{DockerName: "web", DockerTag: tag}}}}}
		return reconcile.Request{Environment: e, Revision: "r-" + tag, Targets: ts}
	}

	plan, err := r.Plan(ctx, req("2"))
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	var got []string
	for _, c := range plan.Changes {
		got = append(got, c.Target+" "+c.Namespace+" -> "+c.To)
	}
	want := []string{"one " + nsA + " -> registry.example.com/web:2", "two-argo " + nsB + " -> registry.example.com/web:2", "two-kubeconfig " + nsB + " -> registry.example.com/web:2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := r.Apply(ctx, req("2", "one"), mustPlanHash(t, r, req("2", "one"))); err != nil {
		t.Fatalf("Apply to cluster one: %v", err)
	}
	if _, err := r.Apply(ctx, req("2", "two-argo"), mustPlanHash(t, r, req("2", "two-argo"))); err != nil {
		t.Fatalf("Apply through the Argo CD cluster Secret: %v", err)
	}
	if a, b := one.Image(t, nsA, "web"), two.Image(t, nsB, "web"); a != "registry.example.com/web:2" || b != "registry.example.com/web:2" {
		t.Fatalf("images after apply: %s on one, %s on two; want web:2 on both", a, b)
	}

	// Rotate the token in the Argo CD Secret: the same targets, without a
	// restart, use the new one as soon as the watch has seen the new version.
	// First to a ServiceAccount without rights (the next pass is refused in
	// its name), then to another one with rights (the next pass works).
	rotate := func(token string) {
		t.Helper()
		s, err := one.Clientset.CoreV1().Secrets(rel).Get(ctx, "cluster-two", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data, s.StringData = nil, argoSecret(t, "cluster-two", two.Config.Host, ca, token).StringData
		if _, err := one.Clientset.CoreV1().Secrets(rel).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// eventually waits for the watch (milliseconds; 10s at most) until a
	// plan of the Argo CD target satisfies ok.
	eventually := func(what string, ok func(*reconcile.Plan, error) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			p, err := r.Plan(ctx, req("3", "two-argo"))
			if ok(p, err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("10s after rotating the token: %s; last plan %+v, error %v", what, p, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rotate(tokenNobody)
	eventually("the pass is not refused as the new ServiceAccount", func(p *reconcile.Plan, err error) bool {
		refused := `"system:serviceaccount:` + nsB + `:nobody" cannot list`
		if err != nil {
			return strings.Contains(err.Error(), refused)
		}
		return len(p.Problems) == 1 && p.Problems[0].Target == "two-argo" && strings.Contains(p.Problems[0].Message, refused)
	})
	rotate(tokenB)
	eventually("the pass does not work with the new token", func(p *reconcile.Plan, err error) bool {
		return err == nil && len(p.Problems) == 0 && len(p.Changes) == 1 && p.Changes[0].From == "registry.example.com/web:2"
	})
}

func mustPlanHash(t *testing.T, r *reconcile.Reconciler, req reconcile.Request) string {
	t.Helper()
	p, err := r.Plan(t.Context(), req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return p.PlanHash
}

// TestSecretTargetErrors: a Secret that does not describe a cluster fails
// the target's requests with an error naming the configuration key, the
// Secret and what is wrong.
func TestSecretTargetErrors(t *testing.T) {
	one := cluster.Env(t)
	rel, ns := one.Namespace(t), one.Namespace(t)
	ctx := t.Context()
	secrets := map[string]map[string]string{
		"no-server":   {"config": `{"bearerToken": "x"}`},
		"bad-config":  {"server": "https://example.invalid", "config": `{"bearerToken": `},
		"exec":        {"server": "https://example.invalid", "config": `{"execProviderConfig": {"command": "argocd-k8s-auth"}}`},
		"kubeconfig":  {"other": "x"},
		"exec-plugin": {"kubeconfig": "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: 'https://example.invalid'}}]\nusers: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1beta1}}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"},
	}
	for name, data := range secrets {
		if _, err := one.Clientset.CoreV1().Secrets(rel).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		target config.Target
		want   string
	}{
		{"argo without server", config.Target{ClusterSecret: "no-server"}, `environments.prod.targets[0].clusterSecret: secret ` + rel + `/no-server: no key "server"`},
		{"argo config not JSON", config.Target{ClusterSecret: "bad-config"}, `environments.prod.targets[0].clusterSecret: secret ` + rel + `/bad-config: key "config": unexpected end of JSON input`},
		{"argo exec provider", config.Target{ClusterSecret: "exec"}, `key "config": awsAuthConfig and execProviderConfig need plugins`},
		{"missing Secret", config.Target{ClusterSecret: "nope"}, `environments.prod.targets[0].clusterSecret: secret ` + rel + `/nope not found`},
		{"kubeconfig key missing", config.Target{KubeconfigSecret: &config.SecretKey{Name: "kubeconfig"}}, `environments.prod.targets[0].kubeconfigSecret: secret ` + rel + `/kubeconfig: no key "kubeconfig"`},
		{"kubeconfig exec plugin", config.Target{KubeconfigSecret: &config.SecretKey{Name: "exec-plugin"}}, `user "u" needs an exec or auth-provider plugin`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.Name, tt.target.Namespace = "a", ns
			cfg := &config.Config{State: config.State{Namespace: rel, Kubeconfig: one.Kubeconfig},
				Environments: map[string]config.Environment{"prod": {Targets: []config.Target{tt.target}}}}
			cfg.Default()
			clients := newClients(t)
			t.Cleanup(clients.Close)
			targets, err := clients.Targets(cfg, "prod", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = targets[0].Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestTargetTimeout: a target whose API server accepts connections but
// never answers fails its requests after the target's timeout.
func TestTargetTimeout(t *testing.T) {
	srv := hangingServer(t)
	cfg := &config.Config{Environments: map[string]config.Environment{"prod": {Targets: []config.Target{
		{Name: "slow", Namespace: "apps", Kubeconfig: writeKubeconfigFor(t, srv), Timeout: config.Duration{Duration: 200 * time.Millisecond}},
	}}}}
	clients := newClients(t)
	targets, err := clients.Targets(cfg, "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = targets[0].Client.AppsV1().Deployments("apps").List(ctx, metav1.ListOptions{})
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "no answer from "+strings.TrimPrefix(srv.URL, "http://")+" within the target's timeout of 200ms") {
		t.Errorf("error = %v, want the target's timeout (not the test's)", err)
	}
}

// hangingServer accepts requests and answers none until the client gives up.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	return srv
}

// writeKubeconfigFor writes a kubeconfig for srv and returns its path.
func writeKubeconfigFor(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
