package auth

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// cluster is the API server of the Kubernetes token tests.
var cluster testenv.Shared

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }

// saToken creates ServiceAccount name in ns and returns a token of it for Stagehand's audience (TokenRequest,
// as `kubectl create token <name> --audience stagehand` does).
func saToken(t *testing.T, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return tokenFor(t, c, ns, name, DefaultKubernetesAudience)
}

// tokenFor returns a token of ServiceAccount name in ns minted for audiences (none: the API server's own).
func tokenFor(t *testing.T, c kubernetes.Interface, ns, name string, audiences ...string) string {
	t.Helper()
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestKubernetesTokens: a ServiceAccount token is verified with TokenReview;
// a Role granting approve on environments.stagehand.io/prod lets one
// ServiceAccount approve prod (and nothing else), another gets no.
func TestKubernetesTokens(t *testing.T) {
	env := cluster.Env(t)
	c, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	ctx := context.Background()
	deployer, intern := saToken(t, c, ns, "deployer"), saToken(t, c, ns, "intern")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "prod-approver"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{KubernetesGroup}, Resources: []string{"environments"}, ResourceNames: []string{"prod"}, Verbs: []string{"approve"}},
		{APIGroups: []string{KubernetesGroup}, Resources: []string{"environments"}, Verbs: []string{"get"}},
	}}
	if _, err := c.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prod-approver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "prod-approver"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := New(WithKubernetes(c, ns))
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		Scope string
		OK    bool
	}
	for _, tc := range []struct {
		token, name string
		want        []verdict
		why         string
	}{
		{deployer, "system:serviceaccount:" + ns + ":deployer",
			[]verdict{{"read", true}, {"approve:prod", true}, {"approve:staging", false}, {"lock:admin", false},
				// The default break-glass rule, lock:admin or approve:<env>, through the same RBAC verdicts.
				{ScopeBreakGlass + "prod", true}, {ScopeBreakGlass + "staging", false}}, ""},
		{intern, "system:serviceaccount:" + ns + ":intern",
			[]verdict{{"read", false}, {"approve:prod", false}, {"approve:staging", false}, {"lock:admin", false},
				{ScopeBreakGlass + "prod", false}},
			"Kubernetes RBAC does not allow system:serviceaccount:" + ns + ":intern to approve environments.stagehand.io/prod (SubjectAccessReview)"},
	} {
		p, err := a.Authenticate(ctx, tc.token)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if p.Name != tc.name || p.Kind != KindKubernetes {
			t.Errorf("principal %v, want %s (kubernetes)", p, tc.name)
		}
		for _, v := range tc.want {
			// RBAC takes a moment to see a new binding: wait for the verdict, never longer than the deadline.
			ok, why, err := a.Authorize(ctx, p, v.Scope)
			for deadline := 50; err == nil && ok != v.OK && deadline > 0; deadline-- {
				time.Sleep(100 * time.Millisecond)
				ok, why, err = a.Authorize(ctx, p, v.Scope)
			}
			if err != nil || ok != v.OK {
				t.Errorf("%s %s = %v %q %v, want %v", p.Name, v.Scope, ok, why, err, v.OK)
			}
			if !ok && v.Scope == "approve:prod" && why != tc.why {
				t.Errorf("why = %q, want %q", why, tc.why)
			}
		}
	}
	if _, err := a.Authenticate(ctx, deployer[:len(deployer)-4]+"AAAA"); err == nil || !strings.Contains(err.Error(), "TokenReview") {
		t.Errorf("a forged token = %v, want a TokenReview refusal", err)
	}
}

// TestKubernetesAudience: a ServiceAccount token is accepted only when minted for Stagehand's audience
// (stagehand by default, or the one configured); the same ServiceAccount's token for the API server alone,
// which would also work against the cluster, is refused with 401 naming the audience.
func TestKubernetesAudience(t *testing.T) {
	env := cluster.Env(t)
	c, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	ctx := context.Background()
	ours := saToken(t, c, ns, "deployer")
	apiServers := tokenFor(t, c, ns, "deployer")
	other := tokenFor(t, c, ns, "deployer", "vault")
	a, err := New(WithKubernetes(c, ns))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.Authenticate(ctx, ours); err != nil || p.ID().String() != "kubernetes:system:serviceaccount:"+ns+":deployer" {
		t.Errorf("a token for the audience stagehand = %v, %v; want the ServiceAccount", p, err)
	}
	for name, tok := range map[string]string{"the API server's": apiServers, "another audience's": other} {
		_, err := a.Authenticate(ctx, tok)
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || !strings.Contains(ae.Message, "--audience stagehand") {
			t.Errorf("%s token = %v, want 401 naming the audience", name, err)
		}
	}
	vault, err := New(WithKubernetes(c, ns), WithKubernetesAudience("vault"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vault.Authenticate(ctx, other); err != nil {
		t.Errorf("a token for the configured audience vault = %v, want accepted", err)
	}
	if _, err := vault.Authenticate(ctx, ours); err == nil {
		t.Error("a token for stagehand accepted where the audience is vault")
	}
}

// TestKubernetesActsFor: a ServiceAccount listed in server.kubernetesActsFor is the person it names: it
// approves where RBAC lets it and where that person's GitHub login may (teams, minPermission), and counts
// as that person; one not listed is automation, decided by RBAC alone.
func TestKubernetesActsFor(t *testing.T) {
	env := cluster.Env(t)
	c, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	ctx := context.Background()
	aliceBot, ci := saToken(t, c, ns, "alice-bot"), saToken(t, c, ns, "ci")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "approver"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{KubernetesGroup}, Resources: []string{"environments"}, Verbs: []string{"approve", "get"}},
	}}
	if _, err := c.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "approver"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "approver"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "alice-bot", Namespace: ns}, {Kind: "ServiceAccount", Name: "ci", Namespace: ns}}}
	if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pol := &logins{may: map[string][]string{"alice": {"staging"}}}
	a, err := New(WithKubernetes(c, ns), WithApproverPolicy(pol),
		WithKubernetesActsFor(map[string]string{"system:serviceaccount:" + ns + ":alice-bot": "github:alice"}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token, wantPerson string
		want                    map[string]bool
		wantWhy                 string
	}{
		{"ServiceAccount acting for alice", aliceBot, "github:alice",
			map[string]bool{"approve:staging": true, "approve:prod": false},
			"kubernetes:system:serviceaccount:" + ns + ":alice-bot acts for github:alice, who may not approve in prod: @alice is in no team that approves prod"},
		{"ServiceAccount acting for nobody", ci, "", map[string]bool{"approve:staging": true, "approve:prod": true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Authenticate(ctx, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			person, _ := p.Identity().Person()
			if person.String() != tt.wantPerson || p.Identity().Automation() != (tt.wantPerson == "") {
				t.Errorf("%s is for %q (automation %v), want %q", p.ID(), person, p.Identity().Automation(), tt.wantPerson)
			}
			got, whys := map[string]bool{}, ""
			for scope := range tt.want {
				// RBAC takes a moment to see a new binding: wait for the staging verdict, never longer than the deadline.
				ok, why, err := a.Authorize(ctx, p, scope)
				for deadline := 50; err == nil && !ok && scope == "approve:staging" && deadline > 0; deadline-- {
					time.Sleep(100 * time.Millisecond)
					ok, why, err = a.Authorize(ctx, p, scope)
				}
				if err != nil {
					t.Fatal(err)
				}
				got[scope] = ok
				if !ok {
					whys += why
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("approvals (-want +got):\n%s", diff)
			}
			if whys != tt.wantWhy {
				t.Errorf("why = %q, want %q", whys, tt.wantWhy)
			}
		})
	}
	if _, err := New(WithKubernetesActsFor(map[string]string{"system:serviceaccount:ci:bot": "token:alice-cli"})); err == nil ||
		!strings.Contains(err.Error(), `acts for "token:alice-cli": want the person as github:<login>`) {
		t.Errorf("acting for a token = %v, want refused", err)
	}
}
