package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

const kubeconfig = `apiVersion: v1
kind: Config
current-context: one
clusters:
- name: one
  cluster: {server: "https://one.example.com:6443"}
- name: two
  cluster: {server: "https://two.example.com:6443"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: one
  context: {cluster: one, user: u}
- name: two
  context: {cluster: two, user: u}
`

func TestRESTConfigAndTargets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for ctx, want := range map[string]string{"": "https://one.example.com:6443", "two": "https://two.example.com:6443"} {
		rc, err := RESTConfig(path, ctx)
		if err != nil {
			t.Fatalf("RESTConfig(%q): %v", ctx, err)
		}
		if rc.Host != want {
			t.Errorf("context %q: host %s, want %s", ctx, rc.Host, want)
		}
	}
	if _, err := RESTConfig(path, "three"); err == nil {
		t.Errorf("RESTConfig with an unknown context: no error")
	}

	c := NewClients()
	targets, err := c.Targets(config.Environment{Targets: []config.Target{
		{Name: "a", Kubeconfig: path, Namespace: "apps-a"},
		{Name: "b", Kubeconfig: path, Namespace: "apps-b"},
		{Name: "c", Kubeconfig: path, Context: "two", Namespace: "apps-a"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range targets {
		names = append(names, tg.Name+"/"+tg.Namespace)
	}
	if diff := cmp.Diff([]string{"a/apps-a", "b/apps-b", "c/apps-a"}, names); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if targets[0].Client != targets[1].Client {
		t.Errorf("targets on the same kubeconfig and context got different clients")
	}
	if targets[0].Client == targets[2].Client {
		t.Errorf("targets on different contexts share a client")
	}
}
