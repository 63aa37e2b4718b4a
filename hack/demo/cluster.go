package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	imageRepo      = "registry.example.com/acme/"
	stateNamespace = "stagehand"
)

// environments maps each example environment to its namespace and lock path.
var environments = []struct{ name, namespace, lockPath string }{
	{"devel", "apps-devel", "apps/devel"},
	{"staging", "apps-staging", "apps/staging"},
	{"prod", "apps-prod", "apps/production"},
}

// running is what the cluster runs before Stagehand starts: one release
// behind everything the example manifests ask for.
var running = map[string]string{
	"edge-gateway": "0.9.1",
	"checkout-api": "1.4.0",
	"payments-api": "2.2.0",
	"web-frontend": "2.8.0",
}

// createWorkloads creates the namespaces and, in each environment's namespace,
// one Deployment per service labelled app.kubernetes.io/name=<service>.
func createWorkloads(ctx context.Context, c kubernetes.Interface) error {
	for _, ns := range []string{stateNamespace, "apps-devel", "apps-staging", "apps-prod"} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	two := int32(2)
	for _, e := range environments {
		for _, svc := range services() {
			labels := map[string]string{"app.kubernetes.io/name": svc}
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: e.namespace, Labels: labels},
				Spec: appsv1.DeploymentSpec{
					Replicas: &two,
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: svc, Image: imageRepo + svc + ":" + running[svc]}}},
					},
				},
			}
			if _, err := c.AppsV1().Deployments(e.namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating deployment %s/%s: %w", e.namespace, svc, err)
			}
		}
	}
	return nil
}

func services() []string {
	var s []string
	for k := range running {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// images returns service → tag of the Deployments in ns.
func images(ctx context.Context, c kubernetes.Interface, ns string) (map[string]string, error) {
	list, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range list.Items {
		img := d.Spec.Template.Spec.Containers[0].Image
		out[d.Name] = img[strings.LastIndex(img, ":")+1:]
	}
	return out, nil
}

// rolledOut reports whether every Deployment in ns has finished its rollout.
func rolledOut(ctx context.Context, c kubernetes.Interface, ns string) bool {
	list, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, d := range list.Items {
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != *d.Spec.Replicas || s.AvailableReplicas != *d.Spec.Replicas {
			return false
		}
	}
	return true
}

// demoFiles are the secrets and configuration the demo writes.
type demoFiles struct {
	config, tokenFile, secretFile string
	token, secret                 string
}

// writeConfig writes the reconciler's configuration and secret files into dir.
func writeConfig(dir, repoURL, kubeconfig, listen string) (demoFiles, error) {
	f := demoFiles{
		config:     filepath.Join(dir, "reconciler.yaml"),
		tokenFile:  filepath.Join(dir, "api-token"),
		secretFile: filepath.Join(dir, "webhook-secret"),
		token:      randomHex(16),
		secret:     randomHex(16),
	}
	var envs strings.Builder
	for _, e := range environments {
		fmt.Fprintf(&envs, `  %s:
    lockPath: %s
    targets:
      - name: local
        kubeconfig: %s
        namespace: %s
`, e.name, e.lockPath, kubeconfig, e.namespace)
	}
	yaml := fmt.Sprintf(`# Written by hack/demo: the reconciler of the local demo.
source:
  url: %s
  branch: main
  root: .
  interval: 30s            # polling; the push webhook wakes it at once
  cacheDir: %s
environments:
%sregistry:
  verifyDigests: false     # the demo's images are not in any registry
  pinDigests: false
workloads:
  rolloutTimeout: 2m
github:
  owner: acme
  repo: manifests
  webhookSecretFile: webhook-secret
server:
  listen: %s
  tokensFile: tokens.yaml  # named tokens; the demo's token is "demo"
  ui:
    demoLogin: demo        # the dashboard signs in a browser on this machine as "demo"; loopback only
locks:
  storage: kubernetes
  namespace: %s
state:
  namespace: %s
  kubeconfig: %s
verification:
  allowAddresses: [127.0.0.1/32]  # prod's test task checks the demo's storefront on this machine
`, repoURL, filepath.Join(dir, "cache"), envs.String(), listen, stateNamespace, stateNamespace, kubeconfig)
	tokens := fmt.Sprintf("- {name: demo, token: %s, scopes: [read, \"lock:admin\", \"approve:*\"]}\n", f.token)
	for path, content := range map[string]string{f.config: yaml, f.tokenFile: f.token + "\n", f.secretFile: f.secret + "\n",
		filepath.Join(dir, "tokens.yaml"): tokens} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return f, err
		}
	}
	return f, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
