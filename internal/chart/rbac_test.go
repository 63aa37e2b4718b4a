package chart

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-gitops/stagehand/internal/crds"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// install renders the chart with the full values scoped to fresh namespaces
// and applies it for real (CRDs are installed by TestMain). It returns the
// release namespace and the target namespaces.
type install struct {
	rel, devel, prod, extra, other string
	objs                           []*unstructured.Unstructured
}

func installFull(t *testing.T, extraValues ...string) install {
	t.Helper()
	env := cluster.Env(t)
	in := install{rel: env.Namespace(t), devel: env.Namespace(t), prod: env.Namespace(t),
		extra: env.Namespace(t), other: env.Namespace(t)}
	values := append([]string{fullValues(t), scopedValues(t, in.devel, in.prod, in.extra)}, extraValues...)
	for _, o := range render(t, in.rel, values...) {
		if o.GetKind() != "CustomResourceDefinition" {
			in.objs = append(in.objs, o)
		}
	}
	if err := newApplier(t, env.Config).applyAll(t.Context(), in.objs, false); err != nil {
		t.Fatal(err)
	}
	return in
}

// access is one question to the authorizer.
type access struct {
	ns, verb, group, resource, name string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.name != "" {
		r += "/" + a.name
	}
	ns := a.ns
	if ns == "" {
		ns = "(all namespaces)"
	}
	return fmt.Sprintf("%s %s in %s", a.verb, r, ns)
}

// allowed asks the API server's authorizer whether the ServiceAccount ns/sa
// may do a (SubjectAccessReview).
func allowed(t *testing.T, ns, sa string, a access) bool {
	t.Helper()
	env := cluster.Env(t)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.ns, Verb: a.verb, Group: a.group, Resource: a.resource, Name: a.name,
		},
	}}
	got, err := env.Clientset.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview %s: %v", a, err)
	}
	return got.Status.Allowed
}

// TestRBACAllowsWhatTheReconcilerNeeds asks the authorizer about every right
// the reconciler uses, and about the ones it must not have.
func TestRBACAllowsWhatTheReconcilerNeeds(t *testing.T) {
	in := installFull(t)
	sa := "sh-stagehand"
	var allow, deny []access
	for _, ns := range []string{in.devel, in.prod, in.extra} {
		for _, r := range []struct{ group, resource string }{
			{"apps", "deployments"}, {"apps", "statefulsets"}, {"apps", "daemonsets"}, {"batch", "cronjobs"},
		} {
			for _, v := range []string{"get", "list", "watch", "patch"} {
				allow = append(allow, access{ns, v, r.group, r.resource, ""})
			}
			for _, v := range []string{"create", "update", "delete", "deletecollection"} {
				deny = append(deny, access{ns, v, r.group, r.resource, ""})
			}
			// Other namespaces and cluster-wide: nothing.
			deny = append(deny, access{in.other, "patch", r.group, r.resource, ""},
				access{in.other, "list", r.group, r.resource, ""},
				access{"", "list", r.group, r.resource, ""},
				access{in.rel, "patch", r.group, r.resource, ""})
		}
		allow = append(allow, access{ns, "create", "", "events", ""}, access{ns, "patch", "", "events", ""},
			access{ns, "create", "events.k8s.io", "events", ""},
			// The workloads' pull credentials (registry.workloadCredentials), by name only: the
			// ServiceAccounts, and the Secrets rbac.pullSecrets names.
			access{ns, "get", "", "serviceaccounts", "default"}, access{ns, "get", "", "secrets", "regcred"},
			access{ns, "get", "", "secrets", "registry-credentials"})
		deny = append(deny,
			access{ns, "list", "", "secrets", ""}, access{ns, "watch", "", "secrets", ""},
			access{ns, "get", "", "secrets", ""}, access{ns, "get", "", "secrets", "db-password"},
			access{ns, "get", "", "secrets", "stagehand-git"},
			access{ns, "list", "", "serviceaccounts", ""}, access{ns, "create", "", "serviceaccounts/token", "default"},
			access{ns, "update", "", "secrets", "regcred"}, access{ns, "create", "", "secrets", ""},
			access{ns, "get", "", "configmaps", ""}, access{ns, "create", "coordination.k8s.io", "leases", ""},
			access{ns, "create", "stagehand.io", "locks", ""}, access{ns, "list", "", "pods", ""},
			access{ns, "create", "", "pods", ""}, access{ns, "create", "", "pods/exec", ""},
			access{ns, "patch", "apps", "replicasets", ""}, access{ns, "create", "batch", "jobs", ""},
			access{ns, "delete", "", "events", ""},
		)
	}
	// Its own namespace: the Lease, state ConfigMaps, Locks, Events.
	allow = append(allow,
		access{in.rel, "create", "coordination.k8s.io", "leases", ""},
		access{in.rel, "get", "coordination.k8s.io", "leases", "stagehand-reconciler"},
		access{in.rel, "update", "coordination.k8s.io", "leases", "stagehand-reconciler"},
		access{in.rel, "get", "", "configmaps", "stagehand-state-prod"},
		access{in.rel, "list", "", "configmaps", ""},
		access{in.rel, "create", "", "configmaps", ""},
		access{in.rel, "update", "", "configmaps", "stagehand-state-prod"},
		// The parts of a state too large for one ConfigMap, once replaced.
		access{in.rel, "delete", "", "configmaps", "stagehand-state-prod-pending-0123456789ab-0"},
		access{in.rel, "get", "stagehand.io", "locks", ""},
		access{in.rel, "list", "stagehand.io", "locks", ""},
		access{in.rel, "create", "stagehand.io", "locks", ""},
		access{in.rel, "update", "stagehand.io", "locks", ""},
		access{in.rel, "delete", "stagehand.io", "locks", ""},
		access{in.rel, "create", "stagehand.io", "environments", "prod"},
		access{in.rel, "patch", "stagehand.io", "environments", "prod"},
		access{in.rel, "patch", "stagehand.io", "environments/status", "prod"},
		access{in.rel, "delete", "stagehand.io", "environments", "gone"},
		access{in.rel, "create", "", "events", ""},
		// The Secrets describing target clusters, by name, watched for rotation.
		access{in.rel, "get", "", "secrets", "cluster-prod-c"}, access{in.rel, "watch", "", "secrets", "cluster-prod-c"},
		access{in.rel, "list", "", "secrets", "kubeconfig-prod-d"}, access{in.rel, "watch", "", "secrets", "kubeconfig-prod-d"},
	)
	deny = append(deny,
		access{in.rel, "get", "", "secrets", ""}, access{in.rel, "list", "", "secrets", ""},
		access{in.rel, "get", "", "secrets", "stagehand-git"},
		access{"", "list", "", "secrets", ""}, access{"", "get", "", "secrets", ""},
		access{in.other, "get", "", "secrets", ""},
		access{in.rel, "get", "coordination.k8s.io", "leases", "someone-elses-lease"},
		access{in.rel, "update", "coordination.k8s.io", "leases", "someone-elses-lease"},
		access{in.rel, "delete", "coordination.k8s.io", "leases", "stagehand-reconciler"},
		access{"", "list", "stagehand.io", "locks", ""}, access{in.other, "create", "stagehand.io", "locks", ""},
		access{in.other, "patch", "stagehand.io", "environments", "prod"},
		// The approve verb is for people (SubjectAccessReviews), never the reconciler's own.
		access{in.rel, "approve", "stagehand.io", "environments", "prod"},
		access{in.other, "list", "", "configmaps", ""},
		access{in.rel, "create", "rbac.authorization.k8s.io", "roles", ""},
		access{in.rel, "create", "rbac.authorization.k8s.io", "rolebindings", ""},
		access{in.rel, "update", "apps", "deployments", "sh-stagehand"},
		access{in.rel, "create", "", "serviceaccounts/token", sa},
		access{"", "list", "", "namespaces", ""}, access{"", "list", "", "nodes", ""},
		access{"", "impersonate", "", "serviceaccounts", ""},
		access{"", "create", "apiextensions.k8s.io", "customresourcedefinitions", ""},
		// crds.apply: its own two CRDs by name, and nothing more of any.
		access{"", "patch", "apiextensions.k8s.io", "customresourcedefinitions", "widgets.example.com"},
		access{"", "create", "apiextensions.k8s.io", "customresourcedefinitions", "widgets.example.com"},
		access{"", "delete", "apiextensions.k8s.io", "customresourcedefinitions", "environments.stagehand.io"},
		access{"", "update", "apiextensions.k8s.io", "customresourcedefinitions", "locks.stagehand.io"},
		access{"", "list", "apiextensions.k8s.io", "customresourcedefinitions", ""},
	)
	for _, name := range []string{"locks.stagehand.io", "environments.stagehand.io"} {
		for _, v := range []string{"get", "create", "patch"} {
			allow = append(allow, access{"", v, "apiextensions.k8s.io", "customresourcedefinitions", name})
		}
	}
	for _, a := range allow {
		if !allowed(t, in.rel, sa, a) {
			t.Errorf("reconciler may not %s; it needs to", a)
		}
	}
	for _, a := range deny {
		if allowed(t, in.rel, sa, a) {
			t.Errorf("reconciler may %s; it must not", a)
		}
	}

	// prbot has no Kubernetes rights at all (it checks locks through the reconciler's API).
	for _, a := range []access{
		{in.rel, "get", "stagehand.io", "locks", ""}, {in.rel, "list", "stagehand.io", "locks", ""},
		{in.rel, "create", "stagehand.io", "locks", ""}, {in.devel, "list", "apps", "deployments", ""},
		{in.rel, "get", "", "secrets", ""}, {in.rel, "get", "", "configmaps", ""},
		{in.rel, "create", "coordination.k8s.io", "leases", ""},
	} {
		if allowed(t, in.rel, "sh-stagehand-prbot", a) {
			t.Errorf("prbot may %s; it must not", a)
		}
	}
}

// TestRBACExactRules lists, as the ServiceAccount itself (a real token), every
// rule it holds in each namespace: exactly the chart's rules plus what every
// authenticated user has.
func TestRBACExactRules(t *testing.T) {
	in := installFull(t)
	cs := kubernetes.NewForConfigOrDie(saConfig(t, in.rel, "sh-stagehand"))
	workloads := []string{
		"apps/daemonsets:get", "apps/daemonsets:list", "apps/daemonsets:patch", "apps/daemonsets:watch",
		"apps/deployments:get", "apps/deployments:list", "apps/deployments:patch", "apps/deployments:watch",
		"apps/statefulsets:get", "apps/statefulsets:list", "apps/statefulsets:patch", "apps/statefulsets:watch",
		"batch/cronjobs:get", "batch/cronjobs:list", "batch/cronjobs:patch", "batch/cronjobs:watch",
		"core/events:create", "core/events:patch", "events.k8s.io/events:create", "events.k8s.io/events:patch",
		"core/secrets/registry-credentials:get", "core/secrets/regcred:get", "core/serviceaccounts:get",
	}
	own := []string{
		"coordination.k8s.io/leases/stagehand-reconciler:get", "coordination.k8s.io/leases/stagehand-reconciler:patch",
		"coordination.k8s.io/leases/stagehand-reconciler:update", "coordination.k8s.io/leases:create", "coordination.k8s.io/leases:list",
		"core/configmaps:create", "core/configmaps:delete", "core/configmaps:get", "core/configmaps:list",
		"core/configmaps:patch", "core/configmaps:update", "core/configmaps:watch",
		"core/events:create", "core/events:patch", "events.k8s.io/events:create", "events.k8s.io/events:patch",
		"stagehand.io/locks:create", "stagehand.io/locks:delete", "stagehand.io/locks:get", "stagehand.io/locks:list",
		"stagehand.io/locks:patch", "stagehand.io/locks:update", "stagehand.io/locks:watch",
		"stagehand.io/environments:create", "stagehand.io/environments:delete", "stagehand.io/environments:get",
		"stagehand.io/environments:list", "stagehand.io/environments:patch", "stagehand.io/environments/status:patch",
		"core/secrets/cluster-prod-c:get", "core/secrets/cluster-prod-c:list", "core/secrets/cluster-prod-c:watch",
		"core/secrets/kubeconfig-prod-d:get", "core/secrets/kubeconfig-prod-d:list", "core/secrets/kubeconfig-prod-d:watch",
	}
	// crds.apply: the two CRDs, by name, from a ClusterRole (so in every namespace's rules).
	crdRules := []string{
		"apiextensions.k8s.io/customresourcedefinitions/environments.stagehand.io:create",
		"apiextensions.k8s.io/customresourcedefinitions/environments.stagehand.io:get",
		"apiextensions.k8s.io/customresourcedefinitions/environments.stagehand.io:patch",
		"apiextensions.k8s.io/customresourcedefinitions/locks.stagehand.io:create",
		"apiextensions.k8s.io/customresourcedefinitions/locks.stagehand.io:get",
		"apiextensions.k8s.io/customresourcedefinitions/locks.stagehand.io:patch",
	}
	tests := []struct {
		name, ns string
		want     []string
	}{
		{name: "release namespace", ns: in.rel, want: append(own, crdRules...)},
		{name: "devel target", ns: in.devel, want: append(workloads, crdRules...)},
		{name: "prod target", ns: in.prod, want: append(workloads, crdRules...)},
		{name: "extra namespace", ns: in.extra, want: append(workloads, crdRules...)},
		{name: "other namespace", ns: in.other, want: crdRules},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(t.Context(),
				&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: tc.ns}},
				metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("SelfSubjectRulesReview in %s: %v", tc.ns, err)
			}
			if r.Status.Incomplete {
				t.Fatalf("rules review incomplete: %s", r.Status.EvaluationError)
			}
			got := flatten(r.Status.ResourceRules)
			if diff := cmp.Diff(sorted(tc.want), got); diff != "" {
				t.Errorf("rules of the reconciler in %s (-want +got):\n%s", tc.ns, diff)
			}
		})
	}
}

// flatten turns rules into sorted "group/resource[/name]:verb" strings,
// leaving out what every authenticated user may do (self reviews).
func flatten(rules []authorizationv1.ResourceRule) []string {
	set := map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if g == "authorization.k8s.io" || g == "authentication.k8s.io" {
				continue
			}
			if g == "" {
				g = "core"
			}
			for _, res := range r.Resources {
				names := r.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, n := range names {
					for _, v := range r.Verbs {
						k := g + "/" + res
						if n != "" {
							k += "/" + n
						}
						set[k+":"+v] = true
					}
				}
			}
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// TestRBACRealRequests acts as the ServiceAccount with a real token: it
// patches a workload in a target namespace, and is refused deleting it,
// touching another namespace, and reading Secrets anywhere.
func TestRBACRealRequests(t *testing.T) {
	env := cluster.Env(t)
	in := installFull(t)
	ctx := t.Context()
	for _, ns := range []string{in.devel, in.other} {
		if _, err := env.Clientset.AppsV1().Deployments(ns).Create(ctx, testenv.Deployment("web", "registry.example.com/web:1.0.0"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Clientset.CoreV1().Secrets(in.rel).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "stagehand-git"}, StringData: map[string]string{"token": "s3cret"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset.CoreV1().Secrets(in.devel).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-password"}, StringData: map[string]string{"password": "s3cret"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{in.devel, in.other} {
		if _, err := env.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}
		if _, err := env.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := saConfig(t, in.rel, "sh-stagehand")
	cs := kubernetes.NewForConfigOrDie(cfg)
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example.com/web:2.0.0"}]}}}}`)

	steps := []struct {
		name      string
		do        func(ctx context.Context) error
		forbidden bool
	}{
		{name: "list Deployments in a target", do: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments(in.devel).List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "patch a Deployment's image in a target", do: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments(in.devel).Patch(ctx, "web", types.StrategicMergePatchType, patch,
				metav1.PatchOptions{FieldManager: "stagehand"})
			return err
		}},
		{name: "record an Event in a target", do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Events(in.devel).Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "web-"},
				InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: in.devel, Name: "web"},
				Reason:         "Deployed", Message: "web: image registry.example.com/web:2.0.0", Type: "Normal",
			}, metav1.CreateOptions{})
			return err
		}},
		{name: "take the leader Lease", do: func(ctx context.Context) error {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "stagehand-reconciler"}}
			if _, err := cs.CoordinationV1().Leases(in.rel).Create(ctx, l, metav1.CreateOptions{}); err != nil {
				return err
			}
			l, err := cs.CoordinationV1().Leases(in.rel).Get(ctx, "stagehand-reconciler", metav1.GetOptions{})
			if err != nil {
				return err
			}
			id := "replica-1"
			l.Spec.HolderIdentity = &id
			_, err = cs.CoordinationV1().Leases(in.rel).Update(ctx, l, metav1.UpdateOptions{})
			return err
		}},
		{name: "write a state ConfigMap", do: func(ctx context.Context) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stagehand-state-test"}, Data: map[string]string{"a": "b"}}
			_, err := cs.CoreV1().ConfigMaps(in.rel).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}},
		{name: "create and delete a Lock", do: func(ctx context.Context) error {
			return lockRoundTrip(ctx, cfg, in.rel)
		}},
		{name: "delete a Deployment in a target", forbidden: true, do: func(ctx context.Context) error {
			return cs.AppsV1().Deployments(in.devel).Delete(ctx, "web", metav1.DeleteOptions{})
		}},
		{name: "create a Deployment in a target", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments(in.devel).Create(ctx, testenv.Deployment("new", "registry.example.com/new:1.0.0"), metav1.CreateOptions{})
			return err
		}},
		{name: "patch a Deployment in another namespace", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments(in.other).Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{name: "list Deployments cluster-wide", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "read a Secret in its own namespace", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(in.rel).Get(ctx, "stagehand-git", metav1.GetOptions{})
			return err
		}},
		{name: "list Secrets cluster-wide", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "read a workload's pull Secret and ServiceAccount in a target", do: func(ctx context.Context) error {
			if _, err := cs.CoreV1().ServiceAccounts(in.devel).Get(ctx, "puller", metav1.GetOptions{}); err != nil {
				return err
			}
			_, err := cs.CoreV1().Secrets(in.devel).Get(ctx, "regcred", metav1.GetOptions{})
			return err
		}},
		{name: "list and watch a target's cluster Secret by name, as the reconciler's watch does", do: func(ctx context.Context) error {
			opts := metav1.ListOptions{FieldSelector: "metadata.name=cluster-prod-c"}
			if _, err := cs.CoreV1().Secrets(in.rel).List(ctx, opts); err != nil {
				return err
			}
			w, err := cs.CoreV1().Secrets(in.rel).Watch(ctx, opts)
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{name: "list Secrets of its namespace without naming one", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(in.rel).List(ctx, metav1.ListOptions{})
			return err
		}},
		{name: "read a target's Secret rbac.pullSecrets does not name", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(in.devel).Get(ctx, "db-password", metav1.GetOptions{})
			return err
		}},
		{name: "read a Secret in another namespace", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(in.other).Get(ctx, "regcred", metav1.GetOptions{})
			return err
		}},
		{name: "list Secrets in a target", forbidden: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(in.devel).List(ctx, metav1.ListOptions{})
			return err
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			err := s.do(t.Context())
			switch {
			case s.forbidden && !apierrors.IsForbidden(err):
				t.Errorf("want Forbidden, got %v", err)
			case !s.forbidden && err != nil:
				t.Errorf("want success, got %v", err)
			}
		})
	}
	// The patch landed, and the Deployment survived the delete attempt.
	d, err := env.Clientset.AppsV1().Deployments(in.devel).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment web after the steps: %v", err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/web:2.0.0" {
		t.Errorf("image after the patch = %s, want registry.example.com/web:2.0.0", got)
	}
}

// TestRBACClusterWide: with rbac.clusterWide the workload rights hold in any
// namespace, and still only get/list/watch/patch (and get of pull
// credentials, never a list of Secrets).
func TestRBACClusterWide(t *testing.T) {
	in := installFull(t, valuesFile(t, map[string]any{"rbac": map[string]any{"clusterWide": true}}))
	sa := "sh-stagehand"
	for _, a := range []access{
		{in.other, "patch", "apps", "deployments", ""}, {"", "list", "apps", "deployments", ""},
		{in.other, "watch", "batch", "cronjobs", ""}, {in.other, "create", "", "events", ""},
		{in.other, "get", "", "secrets", "regcred"}, {in.other, "get", "", "serviceaccounts", "default"},
	} {
		if !allowed(t, in.rel, sa, a) {
			t.Errorf("reconciler may not %s; with clusterWide it needs to", a)
		}
	}
	for _, a := range []access{
		{in.other, "delete", "apps", "deployments", ""}, {in.other, "create", "apps", "deployments", ""},
		{"", "list", "", "secrets", ""}, {in.other, "list", "", "secrets", ""}, {in.other, "watch", "", "secrets", ""},
		{in.other, "get", "", "secrets", "db-password"}, {in.other, "get", "", "secrets", ""},
		{in.other, "create", "stagehand.io", "locks", ""}, {in.other, "create", "coordination.k8s.io", "leases", ""},
	} {
		if allowed(t, in.rel, sa, a) {
			t.Errorf("reconciler may %s; it must not", a)
		}
	}
}

// TestRBACWithoutWorkloadCredentials: config.registry.workloadCredentials
// false takes the rights on Secrets and ServiceAccounts away again, in the
// targets and cluster-wide.
func TestRBACWithoutWorkloadCredentials(t *testing.T) {
	off := map[string]any{"config": map[string]any{"registry": map[string]any{"workloadCredentials": false}}}
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"per namespace", off},
		{"cluster-wide", map[string]any{"config": off["config"], "rbac": map[string]any{"clusterWide": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := installFull(t, valuesFile(t, tc.values))
			for _, ns := range []string{in.devel, in.prod, in.other} {
				for _, a := range []access{{ns, "get", "", "secrets", "regcred"}, {ns, "get", "", "serviceaccounts", "default"}} {
					if allowed(t, in.rel, "sh-stagehand", a) {
						t.Errorf("reconciler may %s with workloadCredentials false", a)
					}
				}
			}
			if !allowed(t, in.rel, "sh-stagehand", access{in.devel, "patch", "apps", "deployments", ""}) {
				t.Errorf("reconciler lost its workload rights")
			}
		})
	}
}

// TestRBACVerificationJobs: rbac.verificationJobs adds what a job
// verification task needs (create, get and delete Jobs, list their pods) in
// the targets, and nowhere else; without it TestRBACExactRules shows none.
func TestRBACVerificationJobs(t *testing.T) {
	in := installFull(t, valuesFile(t, map[string]any{"rbac": map[string]any{"verificationJobs": true}}))
	for _, ns := range []string{in.devel, in.prod} {
		for _, a := range []access{{ns, "create", "batch", "jobs", ""}, {ns, "get", "batch", "jobs", "stagehand-verify-x"},
			{ns, "delete", "batch", "jobs", "stagehand-verify-x"}, {ns, "list", "", "pods", ""}} {
			if !allowed(t, in.rel, "sh-stagehand", a) {
				t.Errorf("reconciler may not %s with rbac.verificationJobs", a)
			}
		}
	}
	for _, a := range []access{{in.other, "create", "batch", "jobs", ""}, {in.devel, "update", "batch", "jobs", "x"}, {in.devel, "create", "", "pods", ""}} {
		if allowed(t, in.rel, "sh-stagehand", a) {
			t.Errorf("reconciler may %s", a)
		}
	}
}

// TestRBACFlaggerCanaries: rbac.flaggerCanaries adds exactly get and list
// of Flagger's Canaries (what pkg/reconcile reads to judge a workload a
// Canary targets) in the targets, and nowhere else; without it
// TestRBACExactRules shows none.
func TestRBACFlaggerCanaries(t *testing.T) {
	in := installFull(t, valuesFile(t, map[string]any{"rbac": map[string]any{"flaggerCanaries": true}}))
	for _, ns := range []string{in.devel, in.prod} {
		for _, a := range []access{{ns, "get", "flagger.app", "canaries", "web"}, {ns, "list", "flagger.app", "canaries", ""}} {
			if !allowed(t, in.rel, "sh-stagehand", a) {
				t.Errorf("reconciler may not %s with rbac.flaggerCanaries", a)
			}
		}
	}
	for _, a := range []access{{in.other, "list", "flagger.app", "canaries", ""}, {in.rel, "get", "flagger.app", "canaries", "web"},
		{in.devel, "watch", "flagger.app", "canaries", ""}, {in.devel, "patch", "flagger.app", "canaries", "web"},
		{in.devel, "update", "flagger.app", "canaries", "web"}, {in.devel, "delete", "flagger.app", "canaries", "web"},
		{in.devel, "list", "flagger.app", "metrictemplates", ""}} {
		if allowed(t, in.rel, "sh-stagehand", a) {
			t.Errorf("reconciler may %s", a)
		}
	}
}

// TestRBACArgoRollouts: rbac.argoRollouts adds what Rollouts as workloads
// need (get, list, watch, patch Rollouts; patch their status, the
// promotion) and rbac.argoAnalysis what analysis tasks need (get
// AnalysisTemplates; create, get, delete AnalysisRuns), each in the targets
// and nowhere else; without them TestRBACExactRules shows none.
func TestRBACArgoRollouts(t *testing.T) {
	rollouts := []access{{"", "get", "argoproj.io", "rollouts", "api"}, {"", "list", "argoproj.io", "rollouts", ""},
		{"", "watch", "argoproj.io", "rollouts", ""}, {"", "patch", "argoproj.io", "rollouts", "api"}, {"", "patch", "argoproj.io", "rollouts/status", "api"}}
	analysis := []access{{"", "get", "argoproj.io", "analysistemplates", "error-rate"}, {"", "create", "argoproj.io", "analysisruns", ""},
		{"", "get", "argoproj.io", "analysisruns", "stagehand-verify-x"}, {"", "delete", "argoproj.io", "analysisruns", "stagehand-verify-x"}}
	never := []access{{"", "create", "argoproj.io", "rollouts", ""}, {"", "delete", "argoproj.io", "rollouts", "api"},
		{"", "update", "argoproj.io", "rollouts", "api"}, {"", "create", "argoproj.io", "analysistemplates", ""},
		{"", "patch", "argoproj.io", "analysisruns", "x"}, {"", "create", "argoproj.io", "experiments", ""}}
	for _, tc := range []struct {
		name       string
		values     map[string]any
		may, mayNo []access
	}{
		{"rollouts", map[string]any{"argoRollouts": true}, rollouts, append(analysis, never...)},
		{"analysis", map[string]any{"argoAnalysis": true}, analysis, append(rollouts, never...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := installFull(t, valuesFile(t, map[string]any{"rbac": tc.values}))
			in2 := func(ns string, as []access) []access {
				out := make([]access, len(as))
				for i, a := range as {
					a.ns = ns
					out[i] = a
				}
				return out
			}
			for _, ns := range []string{in.devel, in.prod} {
				for _, a := range in2(ns, tc.may) {
					if !allowed(t, in.rel, "sh-stagehand", a) {
						t.Errorf("reconciler may not %s with rbac %v", a, tc.values)
					}
				}
				for _, a := range in2(ns, tc.mayNo) {
					if allowed(t, in.rel, "sh-stagehand", a) {
						t.Errorf("reconciler may %s with rbac %v", a, tc.values)
					}
				}
			}
			for _, a := range in2(in.other, tc.may) {
				if allowed(t, in.rel, "sh-stagehand", a) {
					t.Errorf("reconciler may %s outside its targets", a)
				}
			}
		})
	}
}

// TestRBACPerEnvironmentLeases: leaderElection.perEnvironment adds what the
// replicas need of the Leases of every environment and replica (get, list,
// update, delete of its own member Lease) in the release namespace only;
// without it TestRBACExactRules shows the one leader Lease.
func TestRBACPerEnvironmentLeases(t *testing.T) {
	in := installFull(t, valuesFile(t, map[string]any{"config": map[string]any{"leaderElection": map[string]any{"perEnvironment": true}}}))
	for _, a := range []access{{in.rel, "list", "coordination.k8s.io", "leases", ""}, {in.rel, "create", "coordination.k8s.io", "leases", ""},
		{in.rel, "get", "coordination.k8s.io", "leases", "stagehand-env-devel"}, {in.rel, "update", "coordination.k8s.io", "leases", "stagehand-env-devel"},
		{in.rel, "delete", "coordination.k8s.io", "leases", "stagehand-member-0123456789abcdef"}} {
		if !allowed(t, in.rel, "sh-stagehand", a) {
			t.Errorf("reconciler may not %s with leaderElection.perEnvironment", a)
		}
	}
	for _, a := range []access{{in.devel, "list", "coordination.k8s.io", "leases", ""}, {in.other, "update", "coordination.k8s.io", "leases", "stagehand-env-devel"}} {
		if allowed(t, in.rel, "sh-stagehand", a) {
			t.Errorf("reconciler may %s", a)
		}
	}
}

func lockRoundTrip(ctx context.Context, cfg *rest.Config, ns string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r := dyn.Resource(schema.GroupVersionResource{Group: "stagehand.io", Version: "v1alpha1", Resource: "locks"}).Namespace(ns)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stagehand.io/v1alpha1", "kind": "Lock",
		"metadata": map[string]any{"name": "apps-devel-a"},
		"spec": map[string]any{"path": "apps/devel/a", "type": "deploy", "author": "chart-test",
			"createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z", "expiresAt": "2026-01-01T01:00:00Z"},
	}}
	if _, err := r.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := r.List(ctx, metav1.ListOptions{}); err != nil {
		return err
	}
	return r.Delete(ctx, "apps-devel-a", metav1.DeleteOptions{})
}

// TestRBACSecretsByName: in the targets the reconciler reads Secrets only by
// the names rbac.pullSecrets lists; without names, none; any Secret (still
// never a list or watch) only with rbac.readAllSecrets, and never where it
// has no workload rights.
func TestRBACSecretsByName(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		allow  func(in install) []access
		deny   func(in install) []access
	}{
		{
			name:   "no names",
			values: map[string]any{"rbac": map[string]any{"pullSecrets": []any{}}},
			allow: func(in install) []access {
				return []access{{in.devel, "get", "", "serviceaccounts", "default"}, {in.devel, "patch", "apps", "deployments", ""}}
			},
			deny: func(in install) []access {
				return []access{{in.devel, "get", "", "secrets", "regcred"}, {in.prod, "get", "", "secrets", "registry-credentials"},
					{in.devel, "get", "", "secrets", ""}}
			},
		},
		{
			name:   "names",
			values: map[string]any{"rbac": map[string]any{"pullSecrets": []any{"ghcr-pull"}}},
			allow: func(in install) []access {
				return []access{{in.devel, "get", "", "secrets", "ghcr-pull"}, {in.extra, "get", "", "secrets", "ghcr-pull"}}
			},
			deny: func(in install) []access {
				return []access{{in.devel, "get", "", "secrets", "regcred"}, {in.devel, "get", "", "secrets", "ghcr-pull-2"},
					{in.devel, "list", "", "secrets", "ghcr-pull"}, {in.devel, "watch", "", "secrets", "ghcr-pull"},
					{in.other, "get", "", "secrets", "ghcr-pull"}, {in.rel, "get", "", "secrets", "ghcr-pull"}}
			},
		},
		{
			name:   "every Secret, by opt-in",
			values: map[string]any{"rbac": map[string]any{"readAllSecrets": true}},
			allow: func(in install) []access {
				return []access{{in.devel, "get", "", "secrets", "db-password"}, {in.prod, "get", "", "secrets", "anything"}}
			},
			deny: func(in install) []access {
				return []access{{in.devel, "list", "", "secrets", ""}, {in.devel, "watch", "", "secrets", ""},
					{in.other, "get", "", "secrets", "db-password"}, {in.rel, "get", "", "secrets", "stagehand-git"},
					{"", "list", "", "secrets", ""}}
			},
		},
		{
			name: "every Secret, by opt-in, but no workload credentials",
			values: map[string]any{"rbac": map[string]any{"readAllSecrets": true},
				"config": map[string]any{"registry": map[string]any{"workloadCredentials": false}}},
			deny: func(in install) []access {
				return []access{{in.devel, "get", "", "secrets", "db-password"}, {in.devel, "get", "", "secrets", "regcred"}}
			},
		},
		{
			name:   "names, cluster-wide",
			values: map[string]any{"rbac": map[string]any{"clusterWide": true, "pullSecrets": []any{"ghcr-pull"}}},
			allow: func(in install) []access {
				return []access{{in.other, "get", "", "secrets", "ghcr-pull"}}
			},
			deny: func(in install) []access {
				return []access{{in.other, "get", "", "secrets", "db-password"}, {in.other, "get", "", "secrets", ""},
					{"", "list", "", "secrets", ""}}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := installFull(t, valuesFile(t, tc.values))
			if tc.allow != nil {
				for _, a := range tc.allow(in) {
					if !allowed(t, in.rel, "sh-stagehand", a) {
						t.Errorf("reconciler may not %s; it needs to", a)
					}
				}
			}
			for _, a := range tc.deny(in) {
				if allowed(t, in.rel, "sh-stagehand", a) {
					t.Errorf("reconciler may %s; it must not", a)
				}
			}
		})
	}
}

// TestRBACAppliesCRDs acts as the ServiceAccount with a real token and
// applies the reconciler's CRDs as `reconciler run` does at start (they are
// there, as after helm install); with crds.apply false the chart grants
// nothing on CRDs.
func TestRBACAppliesCRDs(t *testing.T) {
	in := installFull(t)
	ax, err := apiextensions.NewForConfig(saConfig(t, in.rel, "sh-stagehand"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := crds.Apply(t.Context(), ax)
	if err != nil {
		t.Fatalf("applying the CRDs as the reconciler: %v", err)
	}
	for _, r := range res {
		if r.Action != crds.Current {
			t.Errorf("CRD %s: %s, want current (the chart's crds/ are the reconciler's)", r.Name, r.Action)
		}
	}
	for _, o := range render(t, "rel", valuesFile(t, map[string]any{"crds": map[string]any{"apply": false}})) {
		if strings.HasSuffix(o.GetName(), "-crds") {
			t.Errorf("with crds.apply false the chart renders %s %s", o.GetKind(), o.GetName())
		}
	}
}
