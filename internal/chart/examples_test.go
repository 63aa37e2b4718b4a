package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	envstatus "github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// decidingBackend is an api.Backend that grants whatever reaches it: what
// the API answers then is what its authentication and scopes allowed.
type decidingBackend struct{ locks *lock.Service }

func (decidingBackend) Approve(_ context.Context, env, planHash string, _ identity.Principal) (*approval.Pending, error) {
	return &approval.Pending{PlanHash: planHash, Revision: "r"}, nil
}
func (decidingBackend) Reject(_ context.Context, env, planHash string, _ approval.Why) (*approval.Pending, error) {
	return &approval.Pending{PlanHash: planHash, Revision: "r"}, nil
}
func (decidingBackend) EnvironmentNames() []string { return []string{"devel", "prod"} }
func (decidingBackend) Environment(_ context.Context, env string) (*envstatus.Environment, error) {
	return &envstatus.Environment{Name: env}, nil
}
func (decidingBackend) History(context.Context, string) ([]approval.Entry, error) { return nil, nil }
func (decidingBackend) HistoryEntry(context.Context, string, int64) (*approval.Entry, error) {
	return nil, approval.ErrUnknownEntry
}
func (decidingBackend) Ready(context.Context) (bool, error) { return true, nil }
func (b decidingBackend) LockService() *lock.Service        { return b.locks }

// TestExampleRoles: rbac.exampleRoles renders a viewer, a locker and an
// approver of prod; three ServiceAccounts bound to them each, on the real
// API server, are answered by RBAC (the real `kubectl auth can-i --as
// system:serviceaccount:<ns>:<sa>`, and the SubjectAccessReview it sends)
// exactly as the reconciler's API lets their tokens read, lock and approve
// each environment (2xx or 403).
func TestExampleRoles(t *testing.T) {
	env := cluster.Env(t)
	ctx := t.Context()
	in := installFull(t, valuesFile(t, map[string]any{"rbac": map[string]any{"kubernetesAuth": true,
		"exampleRoles": map[string]any{"enabled": true, "approve": []string{"prod"}}}}))
	roles := map[string]string{} // suffix → Role name
	for _, o := range in.objs {
		if o.GetKind() != "Role" {
			continue
		}
		for _, suffix := range []string{"-viewer", "-locker", "-approver-prod"} {
			if strings.HasSuffix(o.GetName(), suffix) && o.GetNamespace() == in.rel {
				roles[suffix] = o.GetName()
			}
		}
	}
	if len(roles) != 3 {
		t.Fatalf("example Roles rendered: %v, want a viewer, a locker and an approver of prod", roles)
	}

	locks, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(auth.WithKubernetes(env.Clientset, in.rel))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(decidingBackend{locks: locks}, api.WithAuthenticator(authn))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	type ask struct {
		name                    string
		verb, resource, resName string
		method, path, body      string
	}
	asks := []ask{
		{name: "read devel", verb: "get", resource: "environments", method: "GET", path: "/api/v1/environments/devel"},
		{name: "read prod", verb: "get", resource: "environments", method: "GET", path: "/api/v1/environments/prod"},
		{name: "lock", verb: "create", resource: "locks", method: "POST", path: "/api/v1/locks", body: `{"path":"apps/prod","type":"freeze","duration":"1h"}`},
		{name: "approve devel", verb: "approve", resource: "environments", resName: "devel", method: "POST", path: "/api/v1/environments/devel/approve", body: `{"planHash":"sha256:p"}`},
		{name: "approve prod", verb: "approve", resource: "environments", resName: "prod", method: "POST", path: "/api/v1/environments/prod/approve", body: `{"planHash":"sha256:p"}`},
	}
	want := map[string][]string{ // SA → what it may do
		"viewer":   {"read devel", "read prod"},
		"locker":   {"read devel", "read prod", "lock"},
		"approver": {"read devel", "read prod", "approve prod"},
	}
	for sa, suffix := range map[string]string{"viewer": "-viewer", "locker": "-locker", "approver": "-approver-prod"} {
		if _, err := env.Clientset.CoreV1().ServiceAccounts(in.rel).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Clientset.RbacV1().RoleBindings(in.rel).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: roles[suffix]},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: in.rel}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The API server's RBAC authorizer learns of the bindings through its
	// informers, a moment after they are made: every SA may read.
	for sa := range want {
		read := access{ns: in.rel, verb: "get", group: "stagehand.io", resource: "environments"}
		testenv.WaitFor(t, 30*time.Second, sa+"'s RoleBinding in force", func() bool { return allowed(t, in.rel, sa, read) })
	}
	for sa, may := range want {
		tr, err := env.Clientset.CoreV1().ServiceAccounts(in.rel).CreateToken(ctx, sa,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{auth.DefaultKubernetesAudience}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range asks {
			t.Run(sa+"/"+a.name, func(t *testing.T) {
				canI := allowed(t, in.rel, sa, access{ns: in.rel, verb: a.verb, group: "stagehand.io", resource: a.resource, name: a.resName})
				wantOK := false
				for _, m := range may {
					wantOK = wantOK || m == a.name
				}
				if canI != wantOK {
					t.Errorf("SubjectAccessReview %s %s.stagehand.io/%s as system:serviceaccount:%s:%s = %v, want %v", a.verb, a.resource, a.resName, in.rel, sa, canI, wantOK)
				}
				if got := kubectlCanI(t, env.Kubeconfig, in.rel, sa, a.verb, a.resource, a.resName); got != canI {
					t.Errorf("kubectl auth can-i %s %s.stagehand.io/%s --as system:serviceaccount:%s:%s = %v, the SubjectAccessReview says %v", a.verb, a.resource, a.resName, in.rel, sa, got, canI)
				}
				req, err := http.NewRequestWithContext(ctx, a.method, ts.URL+a.path, bytes.NewBufferString(a.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var body json.RawMessage
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				apiOK := resp.StatusCode < 300
				if apiOK != canI || (!apiOK && resp.StatusCode != http.StatusForbidden) {
					t.Errorf("%s %s as %s: %d %s; RBAC says can-i %v", a.method, a.path, sa, resp.StatusCode, body, canI)
				}
			})
		}
	}
}

// kubectlCanI runs the real `kubectl auth can-i` (Debian's kubectl, which
// `make test` installs: make shell-tools) as the ServiceAccount sa of ns:
// exit 0 and "yes" is allowed, exit 1 and "no" is not.
func kubectlCanI(t *testing.T, kubeconfig, ns, sa, verb, resource, name string) bool {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not installed (make shell-tools installs it): %v", err)
	}
	what := resource + ".stagehand.io"
	if name != "" {
		what += "/" + name
	}
	out, err := exec.CommandContext(t.Context(), path, "--kubeconfig", kubeconfig, "auth", "can-i", verb, what,
		"-n", ns, "--as", "system:serviceaccount:"+ns+":"+sa).Output()
	answer := strings.TrimSpace(string(out))
	var exit *exec.ExitError
	switch {
	case err == nil && answer == "yes":
		return true
	case errors.As(err, &exit) && exit.ExitCode() == 1 && answer == "no":
		return false
	}
	t.Fatalf("kubectl auth can-i %s %s as %s: %v: %q", verb, what, sa, err, out)
	return false
}
