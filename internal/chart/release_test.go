package chart

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestInstallRelease installs a release as a user would: `make release`'s
// tool builds it and pushes the image and the chart to a registry; `helm
// install oci://…/stagehand --version X` installs the chart from there into
// the real API server with two replicas and the image pinned by digest; the
// image is pulled by that digest and its /reconciler run as the two
// replicas, each with the configuration and ServiceAccount the chart gave
// it (pods do not run here). One of them leads, and the example's change is
// deployed.
func TestInstallRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release")
	}
	env := cluster.Env(t)
	ctx := t.Context()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	h := helm(t)
	reg := registrytest.New(t)

	// The release, pushed.
	dist := filepath.Join(t.TempDir(), "dist")
	const version = "v0.9.0"
	started := time.Now()
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/release", "--version", version, "--dist", dist,
		"--platform", "linux/"+runtime.GOARCH, "--commit", strings.Repeat("a", 40), "--source-date-epoch", "1764320000",
		"--helm", h.Path(), "--push", "--registry", reg.Host()+"/acme", "--insecure")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("releasing: %v\n%s", err, out)
	}
	t.Logf("release built and pushed in %s", time.Since(started).Round(time.Second))
	d, err := os.ReadFile(filepath.Join(dist, "image.digest"))
	if err != nil {
		t.Fatal(err)
	}
	digest := strings.TrimSpace(string(d))

	// What the example deploys: web 2.0.0 to devel, where 1.0.0 runs.
	rel, devel := env.Namespace(t), env.Namespace(t)
	reg.Push(t, "team/web", "1.0.0")
	webDigest := reg.Push(t, "team/web", "2.0.0")
	wantImage := reg.Ref("team/web", "2.0.0") + "@" + webDigest
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Commit(t, "manifests", "main", map[string]string{
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "2.0.0"}]}]}`,
	}, "web 2.0.0 to devel")
	if _, err := env.Clientset.AppsV1().Deployments(devel).Create(ctx, testenv.Deployment("web", reg.Ref("team/web", "1.0.0")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stagehand-api"}, StringData: map[string]string{"token": randomHex(t)}}
	if _, err := env.Clientset.CoreV1().Secrets(rel).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	values := valuesFile(t, map[string]any{
		"image": map[string]any{"repository": reg.Host() + "/acme/stagehand", "digest": digest},
		"config": map[string]any{
			"source": map[string]any{"url": url, "interval": "2s"},
			"environments": map[string]any{"devel": map[string]any{"lockPath": "apps/devel", "targets": []any{
				map[string]any{"name": "a", "namespace": devel},
			}}},
			"registry": map[string]any{"insecure": []any{reg.Host()}},
			"github":   map[string]any{"owner": "acme", "repo": "manifests"},
		},
		"secrets": map[string]any{"apiToken": map[string]any{"secretName": "stagehand-api"}},
	})

	// helm install from the registry.
	out, err := h.run(ctx, "install", "sh", "oci://"+reg.Host()+"/acme/charts/stagehand", "--version", strings.TrimPrefix(version, "v"),
		"--plain-http", "--kubeconfig", env.Kubeconfig, "--namespace", rel, "--values", values)
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	manifest, err := h.run(ctx, "get", "manifest", "sh", "--kubeconfig", env.Kubeconfig, "--namespace", rel)
	if err != nil {
		t.Fatalf("helm get manifest: %v\n%s", err, manifest)
	}
	objs, err := Objects([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := env.Clientset.AppsV1().Deployments(rel).Get(ctx, "sh-stagehand", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the installed Deployment: %v", err)
	}
	image := reg.Host() + "/acme/stagehand:" + version + "@" + digest
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Fatalf("the installed Deployment runs %s, want the release's %s", got, image)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Fatalf("the installed Deployment has %v replicas, want 2", dep.Spec.Replicas)
	}

	// The image, by its digest, as a node would pull it.
	bin := pullReconciler(t, image)

	// Two replicas, each with the pod's view of the chart's configuration.
	depObj := find(t, objs, "Deployment", rel, "sh-stagehand")
	kubeconfig := kubeconfigFile(t, saConfig(t, rel, "sh-stagehand"), rel)
	var procs []*process
	var addrs []string
	for i := range 2 {
		dir := t.TempDir()
		materialize(t, objs, depObj, rel, dir)
		cfgPath := filepath.Join(dir, "reconciler.yaml")
		rendered, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		addr := testenv.FreeAddr(t)
		local := strings.ReplaceAll(string(rendered), "/etc/stagehand/", dir+"/")
		if err := os.Chmod(cfgPath, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfgPath, localConfig(t, []byte(local), filepath.Join(t.TempDir(), "cache"), addr), 0o600); err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, a := range facts(t, depObj).Args {
			args = append(args, strings.ReplaceAll(a, "/etc/stagehand/", dir+"/"))
		}
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+rel,
			"POD_NAME=sh-stagehand-"+string(rune('0'+i)), "HOME="+t.TempDir())
		procs = append(procs, startProcess(t, "reconciler "+string(rune('0'+i)), c))
		addrs = append(addrs, addr)
	}

	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, lerr := env.Clientset.CoordinationV1().Leases(rel).Get(ctx, "stagehand-reconciler", metav1.GetOptions{})
		w, werr := env.Clientset.AppsV1().Deployments(devel).Get(ctx, "web", metav1.GetOptions{})
		held := lerr == nil && l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, "sh-stagehand-")
		deployed := werr == nil && w.Spec.Template.Spec.Containers[0].Image == wantImage
		live := status(addrs[0], "/healthz") == 200 && status(addrs[1], "/healthz") == 200
		if held && deployed && live {
			break
		}
		for _, p := range procs {
			select {
			case <-p.exited:
				t.Fatalf("%s exited early: %v\n%s", p.name, p.err, p.out.String())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 min: lease held: %v (%v), web deployed: %v (%v), both live: %v\n%s\n%s",
				held, lerr, deployed, werr, live, procs[0].out.String(), procs[1].out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// pullReconciler pulls image (repo:tag@digest) for this machine's platform,
// by its digest, and writes its /reconciler into a temporary directory.
func pullReconciler(t *testing.T, image string) string {
	t.Helper()
	ref, err := name.NewDigest(image, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(t.Context()), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no /reconciler", ref)
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name != "reconciler" {
			continue
		}
		p := filepath.Join(binDir, "reconciler-"+strings.TrimPrefix(ref.DigestStr(), "sha256:")[:12])
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
