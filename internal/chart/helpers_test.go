package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// fieldManager is who the tests apply the chart as.
const fieldManager = "stagehand-chart-test"

var (
	helmOnce sync.Once
	helmBin  *Helm
	helmErr  error
)

// helm returns the shared helm binary (built once per test binary when missing).
func helm(t *testing.T) *Helm {
	t.Helper()
	helmOnce.Do(func() { helmBin, helmErr = Find(context.Background()) })
	if helmErr != nil {
		t.Fatalf("finding helm: %v", helmErr)
	}
	return helmBin
}

func chartDir(t *testing.T) string {
	t.Helper()
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fullValues is the path of the chart's all-options values file.
func fullValues(t *testing.T) string {
	t.Helper()
	return filepath.Join(chartDir(t), "ci", "full-values.yaml")
}

// valuesFile writes v as a values file in the test's temporary directory.
func valuesFile(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatalf("marshalling values: %v", err)
	}
	// Not t.TempDir(): helm splits --values at commas, which test names hold.
	dir, err := os.MkdirTemp("", "stagehand-chart-values-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// render templates the chart as release "sh" in namespace ns.
func render(t *testing.T, ns string, values ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helm(t).Template(t.Context(), Release{Dir: chartDir(t), Name: "sh", Namespace: ns}, values...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the one rendered object of kind/name (namespace ignored when empty).
func find(t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name && (namespace == "" || o.GetNamespace() == namespace) {
			return o
		}
	}
	t.Fatalf("no %s %s/%s among the rendered objects:\n%s", kind, namespace, name, summary(objs))
	return nil
}

// summary lists objects as "Kind namespace/name", sorted.
func summary(objs []*unstructured.Unstructured) []string {
	var s []string
	for _, o := range objs {
		s = append(s, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	sort.Strings(s)
	return s
}

// scopedValues overlays the full values with target namespaces that exist in
// the test cluster: devel/a in devel, prod/a in prod (prod/b, c and d stay in
// other clusters, reached through a kubeconfig file, an Argo CD cluster
// Secret and a kubeconfig Secret), and extra as the additional namespace.
func scopedValues(t *testing.T, devel, prod, extra string) string {
	t.Helper()
	return valuesFile(t, map[string]any{
		"config": map[string]any{"environments": map[string]any{
			"devel": map[string]any{"lockPath": "apps/devel", "targets": []any{
				map[string]any{"name": "a", "namespace": devel},
			}},
			"prod": map[string]any{"lockPath": "apps/production", "targets": []any{
				map[string]any{"name": "a", "namespace": prod},
				map[string]any{"name": "b", "namespace": "apps-prod", "kubeconfig": "/var/run/stagehand/kubeconfigs/prod-b", "context": "prod-b"},
				map[string]any{"name": "c", "namespace": "apps-prod", "clusterSecret": "cluster-prod-c", "timeout": "10s"},
				map[string]any{"name": "d", "namespace": "apps-prod", "kubeconfigSecret": map[string]any{"name": "kubeconfig-prod-d", "key": "value"}},
			}},
		}},
		"rbac": map[string]any{"extraNamespaces": []any{extra}},
	})
}

// applier applies objects with server-side apply through the dynamic client.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))}
}

// apply server-side applies obj (a dry run when dryRun) and returns the
// object as the API server would store it.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		a.mapper.Reset() // a CRD installed since the last discovery
		if m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("mapping %s: %w", gvk, err)
		}
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		r = a.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	out, err := r.Apply(ctx, obj.GetName(), obj, opts)
	if err != nil {
		return nil, fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return out, nil
}

// applyAll applies every object and joins the errors.
func (a *applier) applyAll(ctx context.Context, objs []*unstructured.Unstructured, dryRun bool) error {
	var errs []error
	for _, o := range objs {
		if _, err := a.apply(ctx, o, dryRun); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// saConfig returns a client configuration holding a real token of the
// ServiceAccount ns/name (TokenRequest), without any of the admin's rights.
func saConfig(t *testing.T, ns, name string) *rest.Config {
	t.Helper()
	env := cluster.Env(t)
	exp := int64(3600)
	tr, err := env.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	return &rest.Config{
		Host:            env.Config.Host,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData},
	}
}

// kubeconfigFile writes cfg as a kubeconfig for a process (the reconciler).
func kubeconfigFile(t *testing.T, cfg *rest.Config, namespace string) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["testenv"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	c.Contexts["sa"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "sa", Namespace: namespace}
	c.CurrentContext = "sa"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, p); err != nil {
		t.Fatal(err)
	}
	return p
}
