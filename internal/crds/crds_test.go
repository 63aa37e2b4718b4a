package crds_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/crds"
)

// widgets is a definition of a test-only resource, named per test, at
// revision rev, whose spec has the given string fields.
func widgets(plural string, rev int, fields ...string) crds.Definition {
	var props strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&props, "                %s: {type: string}\n", f)
	}
	ann := ""
	if rev > 0 {
		ann = fmt.Sprintf("  annotations:\n    stagehand.io/crd-revision: %q\n", fmt.Sprint(rev))
	}
	y := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.test.stagehand.io
%[2]sspec:
  group: test.stagehand.io
  scope: Namespaced
  names: {kind: W%[1]s, plural: %[1]s, listKind: W%[1]sList, singular: w%[1]s}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
%[3]s`, plural, ann, props.String())
	return crds.Definition{File: plural + ".yaml", YAML: []byte(y)}
}

// create puts d into the cluster as Helm does (a plain create), and waits
// until it is served.
func create(t *testing.T, c apiextensions.Interface, d crds.Definition) {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(d.YAML, &crd); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if establishedNow(got) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fields lists the spec fields of the cluster's definition name, and its
// revision annotation and resourceVersion.
func fields(t *testing.T, c apiextensions.Interface, name string) (props []string, rev, rv string) {
	t.Helper()
	crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for p := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties {
		props = append(props, p)
	}
	return sortStrings(props), crd.Annotations[crds.RevisionAnnotation], crd.ResourceVersion
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestApply: on the real API server, a definition missing is created, one
// older (a lower revision, or none as an older chart installed it) upgraded,
// and one newer (a newer build in a rolling upgrade) or current left as it is,
// without a write.
func TestApply(t *testing.T) {
	env := cluster.Env(t)
	c, err := apiextensions.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name       string
		before     *crds.Definition // in the cluster first; nil: missing
		apply      crds.Definition
		want       crds.Result
		wantFields []string
		wantRev    string
		wantWrite  bool
	}{{
		name:  "missing is created",
		apply: widgets("missings", 1, "a"),
		want:  crds.Result{Name: "missings.test.stagehand.io", Action: crds.Created, Want: 1}, wantFields: []string{"a"}, wantRev: "1", wantWrite: true,
	}, {
		name:   "without a revision is upgraded",
		before: ptr(widgets("unrevised", 0, "a")),
		apply:  widgets("unrevised", 1, "a", "b"),
		want:   crds.Result{Name: "unrevised.test.stagehand.io", Action: crds.Upgraded, Have: 0, Want: 1}, wantFields: []string{"a", "b"}, wantRev: "1", wantWrite: true,
	}, {
		name:   "older is upgraded",
		before: ptr(widgets("olders", 1, "a")),
		apply:  widgets("olders", 2, "a", "b"),
		want:   crds.Result{Name: "olders.test.stagehand.io", Action: crds.Upgraded, Have: 1, Want: 2}, wantFields: []string{"a", "b"}, wantRev: "2", wantWrite: true,
	}, {
		name:   "newer is left alone",
		before: ptr(widgets("newers", 3, "a", "b", "c")),
		apply:  widgets("newers", 2, "a", "b"),
		want:   crds.Result{Name: "newers.test.stagehand.io", Action: crds.Newer, Have: 3, Want: 2}, wantFields: []string{"a", "b", "c"}, wantRev: "3",
	}, {
		name:   "current is left alone",
		before: ptr(widgets("currents", 2, "a", "b")),
		apply:  widgets("currents", 2, "a"),
		want:   crds.Result{Name: "currents.test.stagehand.io", Action: crds.Current, Have: 2, Want: 2}, wantFields: []string{"a", "b"}, wantRev: "2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.want.Name
			rvBefore := ""
			if tt.before != nil {
				create(t, c, *tt.before)
				_, _, rvBefore = fields(t, c, name)
			}
			got, err := crds.Apply(ctx, c, crds.WithDefinitions(tt.apply))
			if err != nil {
				t.Fatal(err)
			}
			// Served as discovery tells it, at once: what a RESTMapper or the reconciler's check for
			// the Environment resources reads next.
			if res, err := c.Discovery().ServerResourcesForGroupVersion("test.stagehand.io/v1"); err != nil ||
				!slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name+".test.stagehand.io" == name }) {
				t.Errorf("Apply returned before discovery listed %s: %v", name, err)
			}
			if diff := cmp.Diff([]crds.Result{tt.want}, got); diff != "" {
				t.Errorf("Apply (-want +got):\n%s", diff)
			}
			props, rev, rv := fields(t, c, name)
			if diff := cmp.Diff(tt.wantFields, props); diff != "" {
				t.Errorf("spec fields after Apply (-want +got):\n%s", diff)
			}
			if rev != tt.wantRev {
				t.Errorf("revision after Apply = %q, want %q", rev, tt.wantRev)
			}
			if wrote := rv != rvBefore; wrote != tt.wantWrite {
				t.Errorf("Apply wrote the definition: %v, want %v (resourceVersion %s → %s)", wrote, tt.wantWrite, rvBefore, rv)
			}
			if tt.wantWrite {
				crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !establishedNow(crd) {
					t.Errorf("Apply returned before %s was established: %+v", name, crd.Status.Conditions)
				}
				managers := map[string]bool{}
				for _, m := range crd.ManagedFields {
					managers[m.Manager] = true
				}
				if !managers[crds.FieldManager] {
					t.Errorf("managers of %s = %v, want %s among them (server-side apply)", name, managers, crds.FieldManager)
				}
			}
		})
	}
}

// TestApplyShipped applies this build's own definitions to a cluster that
// has none (an upgrade from a chart without them), then again: the second
// Apply writes nothing, and both resources are served.
func TestApplyShipped(t *testing.T) {
	env := cluster.Env(t)
	c, err := apiextensions.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := crds.Apply(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []crds.Result{
		{Name: "locks.stagehand.io", Action: crds.Created, Want: 1},
		{Name: "environments.stagehand.io", Action: crds.Created, Want: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first Apply (-want +got):\n%s", diff)
	}
	got, err = crds.Apply(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want = []crds.Result{
		{Name: "locks.stagehand.io", Action: crds.Current, Have: 1, Want: 1},
		{Name: "environments.stagehand.io", Action: crds.Current, Have: 2, Want: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second Apply (-want +got):\n%s", diff)
	}
	res, err := env.Clientset.Discovery().ServerResourcesForGroupVersion("stagehand.io/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range res.APIResources {
		served[r.Name] = true
	}
	for _, r := range []string{"locks", "environments", "environments/status"} {
		if !served[r] {
			t.Errorf("stagehand.io/v1alpha1 does not serve %s (serves %v)", r, served)
		}
	}
}

// TestDefinitionsCarryRevisions: every shipped definition parses and has a
// revision; Apply refuses one without.
func TestDefinitionsCarryRevisions(t *testing.T) {
	_, err := crds.Apply(context.Background(), nil, crds.WithDefinitions(widgets("norevision", 0, "a")))
	if err == nil || !strings.Contains(err.Error(), crds.RevisionAnnotation) {
		t.Errorf("Apply of a definition without a revision: %v, want an error naming %s", err, crds.RevisionAnnotation)
	}
}

func establishedNow(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
