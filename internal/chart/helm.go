package chart

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// Helm runs one helm binary.
type Helm struct {
	path string
}

// Find returns the helm found in $PATH or at <repo>/bin/helm, building the
// pinned version with `make helm` when neither exists.
func Find(ctx context.Context) (*Helm, error) {
	if p, err := exec.LookPath("helm"); err == nil {
		return &Helm{path: p}, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(p); err == nil {
		return &Helm{path: p}, nil
	}
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "helm")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building helm with make helm: %w\n%s", err, out.String())
	}
	return &Helm{path: p}, nil
}

// Path returns the binary's path.
func (h *Helm) Path() string { return h.path }

// Lint runs `helm lint --strict` on the chart in dir with the given values
// files and returns helm's output.
func (h *Helm) Lint(ctx context.Context, dir string, values ...string) (string, error) {
	args := []string{"lint", "--strict", dir}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	out, err := h.run(ctx, args...)
	if err != nil {
		return out, fmt.Errorf("linting chart %s: %w\n%s", dir, err, out)
	}
	return out, nil
}

// Release is a release of the chart in Dir named Name in Namespace.
type Release struct {
	Dir, Name, Namespace string
}

// Template renders the chart as rel with the given values files (later
// files win) and returns the manifests.
func (h *Helm) Template(ctx context.Context, rel Release, values ...string) ([]byte, error) {
	dir := rel.Dir
	args := []string{"template", rel.Name, dir, "--namespace", rel.Namespace, "--include-crds"}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	cmd := exec.CommandContext(ctx, h.path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w\n%s", dir, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (h *Helm) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Objects splits a multi-document YAML stream into objects, skipping empty
// documents. Numbers become int64 where they are whole, as from the API
// server.
func Objects(manifests []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading rendered manifests: %w", err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w\n%s", err, doc)
		}
		if s := string(bytes.TrimSpace(j)); s == "null" || s == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w\n%s", err, doc)
		}
		objs = append(objs, u)
	}
}

// Dir returns the chart's directory, <repo>/charts/stagehand.
func Dir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "stagehand"), nil
}

// RepoRoot is testenv.RepoRoot: the directory holding the Stagehand module's go.mod.
func RepoRoot() (string, error) { return testenv.RepoRoot() }

// Install runs `helm install` of the chart as rel into the cluster in
// kubeconfig, and returns helm's output (with the notes).
func (h *Helm) Install(ctx context.Context, kubeconfig string, rel Release, values ...string) (string, error) {
	dir := rel.Dir
	args := []string{"install", rel.Name, dir, "--kubeconfig", kubeconfig, "--namespace", rel.Namespace}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	out, err := h.run(ctx, args...)
	if err != nil {
		return out, fmt.Errorf("installing chart %s: %w\n%s", dir, err, out)
	}
	return out, nil
}

// Uninstall runs `helm uninstall` of release in namespace.
func (h *Helm) Uninstall(ctx context.Context, kubeconfig, release, namespace string) (string, error) {
	out, err := h.run(ctx, "uninstall", release, "--kubeconfig", kubeconfig, "--namespace", namespace, "--wait")
	if err != nil {
		return out, fmt.Errorf("uninstalling release %s: %w\n%s", release, err, out)
	}
	return out, nil
}
