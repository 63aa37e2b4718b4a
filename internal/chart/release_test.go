package chart

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestInstallRelease installs a release as a user would, upgrades it and
// rolls it back.
//
// Install: `make release`'s tool builds the release and pushes the image
// and the chart to a registry; `helm install oci://…/stagehand --version X`
// installs the chart from there into the real API server with two replicas
// and the image pinned by digest; the image is pulled by that digest and its
// /reconciler run as the two replicas, each with the configuration and
// ServiceAccount the chart gave it (pods do not run here). One of them
// leads, and the example's change is deployed.
//
// Upgrade: a second release of the same commit, whose binaries are stamped
// to write a newer state schema (hack/release --state-schema, the test's
// knob), is pushed and `helm upgrade`d to while prod has a plan waiting for
// approval and devel an apply in flight (its rollout held: the new pods
// cannot be scheduled). The replicas are replaced one at a time as the
// Deployment's rolling update would, old and new side by side: the pending
// plan is still there with its planHash and is approved through the new
// build's API and applied once; devel's apply is finished by the new leader,
// its workload patched once; the state and the Environment objects are the
// new build's.
//
// Rollback: `helm rollback` to the first release, replaced the same way: the
// older build meets the state the newer one wrote and refuses it, naming
// both schema versions in its log and API, and writes nothing to it (the
// state ConfigMaps' resourceVersions; no ConfigMap or Environment write in
// the audit log).
func TestInstallRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release")
	}
	began := time.Now()
	r := newReleaseFixture(t)
	ctx := t.Context()
	env := r.env

	// Both releases, pushed: this one, and the next with a newer state schema.
	const version, next = "v0.9.0", "v0.10.0"
	newer := state.SchemaVersion + 1
	digest := r.release(t, version)
	nextDigest := r.release(t, next, "--state-schema", strconv.Itoa(newer))

	// What the example deploys: web 2.0.0 to devel, where 1.0.0 runs; prod
	// runs what its manifest asks.
	r.deployment(t, r.devel, "web", "1.0.0")
	r.deployment(t, r.prod, "api", "1.0.0")
	rev1 := r.commit(t, "2.0.0", "1.0.0", "web 2.0.0 to devel")

	// helm install from the registry.
	r.helmRun(t, "install", "sh", "oci://"+r.reg.Host()+"/acme/charts/stagehand", "--version", strings.TrimPrefix(version, "v"),
		"--plain-http", "--namespace", r.rel, "--values", r.values(t, digest))
	dep, err := env.Clientset.AppsV1().Deployments(r.rel).Get(ctx, "sh-stagehand", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the installed Deployment: %v", err)
	}
	image := r.image(version, digest)
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Fatalf("the installed Deployment runs %s, want the release's %s", got, image)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Fatalf("the installed Deployment has %v replicas, want 2", dep.Spec.Replicas)
	}

	// The image, by its digest, as a node would pull it; two replicas.
	oldBin := pullReconciler(t, image)
	a, b := r.start(t, oldBin, "sh-stagehand-0"), r.start(t, oldBin, "sh-stagehand-1")
	r.waitFor(t, 2*time.Minute, "a replica leading, both live, and web 2.0.0 deployed to devel", func() bool {
		return strings.HasPrefix(r.holder(t), "sh-stagehand-") && a.live() && b.live() &&
			r.imageOf(t, r.devel, "web") == r.ref("web", "2.0.0") && r.result(t, a, "devel", rev1) == approval.ResultSucceeded
	})
	t.Logf("installed and deployed %s after %s", version, time.Since(began).Round(time.Second))

	// Before the upgrade: devel's next rollout cannot finish (its pods fit
	// no node), prod gets a change that waits for approval.
	r.patch(t, r.devel, "web", `{"spec":{"template":{"spec":{"nodeSelector":{"stagehand.io/no-such-node":"true"}}}}}`)
	rev2 := r.commit(t, "3.0.0", "2.0.0", "web 3.0.0 to devel, api 2.0.0 to prod")
	var pending, inFlight string
	r.waitFor(t, time.Minute, "prod's plan pending and devel's apply in flight, web patched", func() bool {
		p, d := r.view(t, a, "prod"), r.view(t, a, "devel")
		if p.Pending == nil || p.Pending.Revision != rev2 || d.InFlight == nil || d.InFlight.Revision != rev2 {
			return false
		}
		pending, inFlight = p.Pending.PlanHash, d.InFlight.PlanHash
		return r.imageOf(t, r.devel, "web") == r.ref("web", "3.0.0")
	})

	// helm upgrade, then the rolling update (the old leader's apply is
	// interrupted).
	r.helmRun(t, "upgrade", "sh", "oci://"+r.reg.Host()+"/acme/charts/stagehand", "--version", strings.TrimPrefix(next, "v"),
		"--plain-http", "--namespace", r.rel, "--values", r.values(t, nextDigest))
	nextImage := r.image(next, nextDigest)
	if got := r.imageOf(t, r.rel, "sh-stagehand"); got != nextImage {
		t.Fatalf("the upgraded Deployment runs %s, want %s", got, nextImage)
	}
	c, d := r.roll(t, a, b, pullReconciler(t, nextImage), "sh-stagehand-2", "sh-stagehand-3")
	r.waitFor(t, time.Minute, "a new replica leading and writing schema "+strconv.Itoa(newer), func() bool {
		h := r.holder(t)
		return (h == c.name || h == d.name) && r.schemaOf(t, "devel") == newer
	})

	// devel: the new leader finds every patch of the apply in place and
	// records it, once; its rollout is let go.
	r.patch(t, r.devel, "web", `{"spec":{"template":{"spec":{"nodeSelector":null}}}}`)
	r.waitFor(t, 2*time.Minute, "devel's apply of "+rev2[:8]+" recorded succeeded", func() bool {
		return r.result(t, c, "devel", rev2) == approval.ResultSucceeded
	})
	var succeeded []approval.Entry
	for _, e := range r.history(t, c, "devel") {
		if e.Revision == rev2 && e.Result == approval.ResultSucceeded {
			succeeded = append(succeeded, e)
		}
	}
	if len(succeeded) != 1 || succeeded[0].PlanHash != inFlight {
		t.Errorf("devel's succeeded entries of %s: %+v, want one, of the plan in flight %s", rev2[:8], succeeded, inFlight)
	}
	if n := r.patches(t, r.devel, "web"); n != 2 {
		t.Errorf("the reconciler patched devel/web %d times, want 2 (2.0.0 at install, 3.0.0 once across the upgrade)", n)
	}

	// prod's plan survived the upgrade: the same planHash, approvable
	// through the new build's API, applied once.
	if v := r.view(t, d, "prod"); v.Pending == nil || v.Pending.PlanHash != pending || v.Pending.Revision != rev2 {
		t.Fatalf("prod after the upgrade: pending %+v, want plan %s of %s", v.Pending, pending, rev2[:8])
	}
	if code, body := d.call(t, "POST", "/api/v1/environments/prod/approve", r.approver, `{"planHash": "`+pending+`"}`, nil); code != http.StatusAccepted {
		t.Fatalf("approving prod's plan %s on %s: %d %s", pending, d.name, code, body)
	}
	r.waitFor(t, time.Minute, "prod's approved plan applied and recorded", func() bool {
		return r.imageOf(t, r.prod, "api") == r.ref("api", "2.0.0") && r.result(t, c, "prod", rev2) == approval.ResultSucceeded
	})
	if code, body := c.call(t, "POST", "/api/v1/environments/prod/approve", r.approver, `{"planHash": "`+pending+`"}`, nil); code != http.StatusConflict {
		t.Errorf("approving the applied plan %s again on %s: %d %s, want 409", pending, c.name, code, body)
	}
	if n := r.patches(t, r.prod, "api"); n != 1 {
		t.Errorf("the reconciler patched prod/api %d times, want 1", n)
	}
	if got := r.schemaOf(t, "prod"); got != newer {
		t.Errorf("prod's state has schema %d after the upgrade, want %d", got, newer)
	}
	r.waitFor(t, time.Minute, "the Environment prod showing the approved plan's deploy", func() bool {
		return r.lastDeploy(t, "prod") == pending
	})
	t.Logf("upgraded to %s after %s", next, time.Since(began).Round(time.Second))

	// The audit log sees the state's writes (the check below is not empty
	// for want of them).
	if len(r.writes(t, began, "configmaps")) == 0 {
		t.Fatalf("the audit log shows no ConfigMap write in %s since the test began", r.rel)
	}

	// helm rollback, replaced the same way.
	r.helmRun(t, "rollback", "sh", "1", "--namespace", r.rel)
	if got := r.imageOf(t, r.rel, "sh-stagehand"); got != image {
		t.Fatalf("the rolled-back Deployment runs %s, want %s", got, image)
	}
	e, f := r.roll(t, c, d, oldBin, "sh-stagehand-4", "sh-stagehand-5")
	before := r.stateVersions(t)
	var old *replica
	r.waitFor(t, time.Minute, "an old replica leading and refusing both environments' state", func() bool {
		switch r.holder(t) {
		case e.name:
			old = e
		case f.name:
			old = f
		default:
			return false
		}
		out := old.out.String()
		return strings.Contains(out, r.refusal("devel", newer)) && strings.Contains(out, r.refusal("prod", newer))
	})
	acquired := r.acquired(t)
	for _, line := range strings.Split(old.out.String(), "\n") {
		if strings.Contains(line, r.refusal("prod", newer)) {
			t.Logf("%s logs: %s", old.name, line)
			break
		}
	}
	code, body := old.call(t, "GET", "/api/v1/environments/prod", r.approver, "", nil)
	t.Logf("GET /api/v1/environments/prod on %s: %d %s", old.name, code, body)
	if code < 400 || !strings.Contains(body, "schema version "+strconv.Itoa(newer)) || !strings.Contains(body, "schema version "+strconv.Itoa(state.SchemaVersion)) {
		t.Errorf("GET prod on the rolled-back %s: %d %s; want an error naming schema %d and %d", old.name, code, body, newer, state.SchemaVersion)
	}
	r.stop(t, e)
	r.stop(t, f)
	if diff := diffVersions(before, r.stateVersions(t)); diff != "" {
		t.Errorf("the older build wrote the newer state: %s", diff)
	}
	if w := r.writes(t, acquired, "configmaps", "environments"); len(w) > 0 {
		t.Errorf("writes in %s since the older build took the Lease at %s: %s", r.rel, acquired.Format(time.RFC3339Nano), strings.Join(w, "; "))
	}
	t.Logf("rolled back to %s after %s", version, time.Since(began).Round(time.Second))
}

// releaseFixture is TestInstallRelease's world: the control plane, helm, a
// registry the releases and images are pushed to, the manifests repository,
// the release namespace and the namespaces of devel and prod, and the
// replicas running.
type releaseFixture struct {
	env                *testenv.Env
	h                  *Helm
	root               string
	reg                *registrytest.Registry
	git                *gitserver.Server
	url                string
	rel, devel, prod   string
	apiToken, approver string            // the legacy token (read) and a named token with approve:prod
	kubeconfig         string            // the chart's ServiceAccount's
	digests            map[string]string // of the pushed images team/<svc>:<tag>, by svc:tag
	running            map[*replica]bool
	all                []*replica // every replica started, in order
}

func newReleaseFixture(t *testing.T) *releaseFixture {
	t.Helper()
	env := cluster.Env(t)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := &releaseFixture{env: env, h: helm(t), root: root, reg: registrytest.New(t), git: gitserver.New(t),
		rel: env.Namespace(t), devel: env.Namespace(t), prod: env.Namespace(t),
		apiToken: randomHex(t), approver: randomHex(t), digests: map[string]string{}, running: map[*replica]bool{}}
	r.url = r.git.Init(t, "manifests")
	for _, img := range []string{"web:1.0.0", "web:2.0.0", "web:3.0.0", "api:1.0.0", "api:2.0.0"} {
		repo, tag, _ := strings.Cut(img, ":")
		r.digests[img] = r.reg.Push(t, "team/"+repo, tag)
	}
	for name, data := range map[string]map[string]string{
		"stagehand-api":    {"token": r.apiToken},
		"stagehand-tokens": {"tokens.yaml": "- {name: release-test, token: " + r.approver + ", scopes: [read, approve:prod]}\n"},
	} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
		if _, err := env.Clientset.CoreV1().Secrets(r.rel).Create(t.Context(), sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// release builds release version with hack/release (`make release`'s tool)
// for this machine's platform, pushes it, and returns its image's digest.
func (r *releaseFixture) release(t *testing.T, version string, extra ...string) string {
	t.Helper()
	dist := filepath.Join(t.TempDir(), "dist")
	started := time.Now()
	args := append([]string{"run", "./hack/release", "--version", version, "--dist", dist,
		"--platform", "linux/" + runtime.GOARCH, "--commit", strings.Repeat("a", 40), "--source-date-epoch", "1764320000",
		"--helm", r.h.Path(), "--push", "--registry", r.reg.Host() + "/acme", "--insecure"}, extra...)
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = r.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("releasing %s: %v\n%s", version, err, out)
	}
	t.Logf("release %s built and pushed in %s", version, time.Since(started).Round(time.Second))
	d, err := os.ReadFile(filepath.Join(dist, "image.digest"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(d))
}

// image is the reference the chart of version runs, pinned to digest.
func (r *releaseFixture) image(version, digest string) string {
	return r.reg.Host() + "/acme/stagehand:" + version + "@" + digest
}

// values writes the release's values: devel deploys without approval,
// prod waits for one; the image pinned to digest.
func (r *releaseFixture) values(t *testing.T, digest string) string {
	t.Helper()
	return valuesFile(t, map[string]any{
		"image": map[string]any{"repository": r.reg.Host() + "/acme/stagehand", "digest": digest},
		"config": map[string]any{
			"source": map[string]any{"url": r.url, "interval": "2s"},
			"environments": map[string]any{
				"devel": map[string]any{"lockPath": "apps/devel", "targets": []any{map[string]any{"name": "a", "namespace": r.devel}}},
				"prod":  map[string]any{"lockPath": "apps/prod", "targets": []any{map[string]any{"name": "a", "namespace": r.prod}}},
			},
			"registry": map[string]any{"insecure": []any{r.reg.Host()}},
			"github":   map[string]any{"owner": "acme", "repo": "manifests"},
			"server":   map[string]any{"shutdownGrace": "6s"},
		},
		"secrets": map[string]any{
			"apiToken": map[string]any{"secretName": "stagehand-api"},
			"tokens":   map[string]any{"secretName": "stagehand-tokens"},
		},
	})
}

// helmRun runs helm against the test's control plane and fails on error.
func (r *releaseFixture) helmRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := r.h.run(t.Context(), append(args, "--kubeconfig", r.env.Kubeconfig)...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ref is the pinned image of team/<svc>:<tag> as the reconciler deploys it.
func (r *releaseFixture) ref(svc, tag string) string {
	return r.reg.Ref("team/"+svc, tag) + "@" + r.digests[svc+":"+tag]
}

// deployment creates Deployment ns/name running team/<name>:<tag>.
func (r *releaseFixture) deployment(t *testing.T, ns, name, tag string) {
	t.Helper()
	if _, err := r.env.Clientset.AppsV1().Deployments(ns).Create(t.Context(), testenv.Deployment(name, r.reg.Ref("team/"+name, tag)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// commit asks for web:<devel> in devel (without approval) and api:<prod>
// in prod, and returns the revision.
func (r *releaseFixture) commit(t *testing.T, devel, prod, msg string) string {
	t.Helper()
	return r.git.Repo("manifests").Commit(t, "main", map[string]string{
		"environments/devel/manifest.json": `{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": "` + devel + `"}]}]}`,
		"environments/prod/manifest.json":  `{"services": [{"name": "api", "containers": [{"dockerTag": "` + prod + `"}]}]}`,
	}, msg)
}

// patch merge-patches Deployment ns/name as the test (not the reconciler).
func (r *releaseFixture) patch(t *testing.T, ns, name, patch string) {
	t.Helper()
	if _, err := r.env.Clientset.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching deployment %s/%s: %v", ns, name, err)
	}
}

// imageOf is the image of Deployment ns/name ("" when unreadable).
func (r *releaseFixture) imageOf(t *testing.T, ns, name string) string {
	t.Helper()
	d, err := r.env.Clientset.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// holder is the identity holding the leader Lease ("" when none).
func (r *releaseFixture) holder(t *testing.T) string {
	t.Helper()
	l, err := r.env.Clientset.CoordinationV1().Leases(r.rel).Get(t.Context(), "stagehand-reconciler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// acquired is when the leader Lease's holder took it.
func (r *releaseFixture) acquired(t *testing.T) time.Time {
	t.Helper()
	l, err := r.env.Clientset.CoordinationV1().Leases(r.rel).Get(t.Context(), "stagehand-reconciler", metav1.GetOptions{})
	if err != nil || l.Spec.AcquireTime == nil {
		t.Fatalf("the leader Lease's acquire time: %v", err)
	}
	return l.Spec.AcquireTime.Time
}

// schemaOf is the schema version env's state ConfigMap says it was written
// with (-1 when unreadable).
func (r *releaseFixture) schemaOf(t *testing.T, env string) int {
	t.Helper()
	cm, err := r.env.Clientset.CoreV1().ConfigMaps(r.rel).Get(t.Context(), state.ConfigMapName(env), metav1.GetOptions{})
	if err != nil {
		return -1
	}
	var s struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal([]byte(cm.Data["schema.json"]), &s); err != nil {
		return -1
	}
	return s.Version
}

// stateVersions are the state ConfigMaps' resourceVersions, by name.
func (r *releaseFixture) stateVersions(t *testing.T) map[string]string {
	t.Helper()
	cms, err := r.env.Clientset.CoreV1().ConfigMaps(r.rel).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]string{}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "stagehand-state-") {
			v[cm.Name] = cm.ResourceVersion
		}
	}
	if len(v) < 2 {
		t.Fatalf("state ConfigMaps in %s: %v, want devel's and prod's", r.rel, v)
	}
	return v
}

// diffVersions says which ConfigMaps changed between two stateVersions.
func diffVersions(before, after map[string]string) string {
	var d []string
	for n, v := range before {
		if after[n] != v {
			d = append(d, fmt.Sprintf("%s resourceVersion %s → %q", n, v, after[n]))
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			d = append(d, n+" created")
		}
	}
	return strings.Join(d, "; ")
}

// writes are the audit log's writes to resources (ConfigMaps, Environments)
// in the release namespace received at or after since.
func (r *releaseFixture) writes(t *testing.T, since time.Time, resources ...string) []string {
	t.Helper()
	evs, err := r.env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var w []string
	for _, ev := range evs {
		if slices.Contains(resources, ev.ObjectRef.Resource) && ev.ObjectRef.Namespace == r.rel && !ev.RequestReceivedTimestamp.Time.Before(since) {
			w = append(w, fmt.Sprintf("%s %s %s/%s by %s at %s (%d)", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.ObjectRef.Subresource,
				ev.UserAgent, ev.RequestReceivedTimestamp.Format(time.RFC3339Nano), ev.ResponseStatus.Code))
		}
	}
	return w
}

// patches counts the reconciler's successful patches of Deployment ns/name
// in the audit log.
func (r *releaseFixture) patches(t *testing.T, ns, name string) int {
	t.Helper()
	evs, err := r.env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Verb == "patch" && ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Subresource == "" && ev.ObjectRef.Namespace == ns &&
			ev.ObjectRef.Name == name && strings.HasPrefix(ev.UserAgent, "stagehand") && ev.ResponseStatus.Code/100 == 2 {
			n++
		}
	}
	return n
}

// lastDeploy is the planHash of the last deploy the Environment object env
// shows ("" when none).
func (r *releaseFixture) lastDeploy(t *testing.T, env string) string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(r.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	o, err := dyn.Resource(schema.GroupVersionResource{Group: "stagehand.io", Version: "v1alpha1", Resource: "environments"}).
		Namespace(r.rel).Get(t.Context(), env, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	h, _, _ := unstructured.NestedString(o.Object, "status", "lastDeploy", "planHash")
	return h
}

// refusal is what the older build says of env's state, written with schema
// found.
func (r *releaseFixture) refusal(env string, found int) string {
	return (&state.SchemaError{ConfigMap: r.rel + "/" + state.ConfigMapName(env), Found: found, OldestReader: found, Build: state.SchemaVersion}).Error()
}

// replica is one reconciler process as a pod of the chart's Deployment.
type replica struct {
	*process
	addr string
}

// start runs bin as the pod identity of the installed chart's current
// revision: its Deployment's arguments and config volume, written out as
// the kubelet would under a directory of its own, and the ServiceAccount's
// token.
func (r *releaseFixture) start(t *testing.T, bin, identity string) *replica {
	t.Helper()
	objs, err := Objects([]byte(r.helmRun(t, "get", "manifest", "sh", "--namespace", r.rel)))
	if err != nil {
		t.Fatal(err)
	}
	if r.kubeconfig == "" {
		r.kubeconfig = kubeconfigFile(t, saConfig(t, r.rel, "sh-stagehand"), r.rel)
	}
	depObj := find(t, objs, "Deployment", r.rel, "sh-stagehand")
	dir := t.TempDir()
	materialize(t, objs, depObj, r.rel, dir)
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
	c.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig, "POD_NAMESPACE="+r.rel, "POD_NAME="+identity, "HOME="+t.TempDir())
	p := &replica{process: startProcess(t, identity, c), addr: addr}
	r.running[p] = true
	r.all = append(r.all, p)
	return p
}

// roll replaces the running replicas a and b by two running bin as
// identities x and y, one at a time as the Deployment's rolling update does
// (maxSurge 1, maxUnavailable 0), old and new side by side: x started and
// live, the standby stopped, y started and live, the leader stopped last,
// so that the Lease passes from an old replica to a new one.
func (r *releaseFixture) roll(t *testing.T, a, b *replica, bin, x, y string) (*replica, *replica) {
	t.Helper()
	leader, standby := a, b
	if r.holder(t) == b.name {
		leader, standby = b, a
	}
	n1 := r.start(t, bin, x)
	r.waitFor(t, time.Minute, x+" live beside "+a.name+" and "+b.name, n1.live)
	r.stop(t, standby)
	n2 := r.start(t, bin, y)
	r.waitFor(t, time.Minute, y+" live beside "+n1.name+" and "+leader.name, n2.live)
	r.stop(t, leader)
	return n1, n2
}

// stop stops p as the kubelet would (SIGTERM) and waits for its clean exit.
func (r *releaseFixture) stop(t *testing.T, p *replica) {
	t.Helper()
	delete(r.running, p)
	p.stop(t)
}

// waitFor polls cond until it holds, failing when timeout passes first or a
// running replica exits.
func (r *releaseFixture) waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for p := range r.running {
			select {
			case <-p.exited:
				t.Fatalf("waiting for %s: %s exited: %v\n%s", what, p.name, p.err, r.describe(t))
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s\n%s", timeout, what, r.describe(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// describe is what a failure shows: the workloads' rollouts, the
// environments' views, every replica's log.
func (r *releaseFixture) describe(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, w := range [][2]string{{r.devel, "web"}, {r.prod, "api"}} {
		d, err := r.env.Clientset.AppsV1().Deployments(w[0]).Get(t.Context(), w[1], metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(&b, "deployment %s/%s: %v\n", w[0], w[1], err)
			continue
		}
		fmt.Fprintf(&b, "deployment %s/%s: image %s, generation %d, status %+v\n", w[0], w[1], d.Spec.Template.Spec.Containers[0].Image, d.Generation, d.Status)
	}
	for _, p := range r.all {
		if r.running[p] {
			for _, env := range []string{"devel", "prod"} {
				_, body := p.call(t, "GET", "/api/v1/environments/"+env, r.apiToken, "", nil)
				fmt.Fprintf(&b, "%s on %s: %s\n", env, p.name, tail(body, 1500))
			}
		}
	}
	for _, p := range r.all {
		fmt.Fprintf(&b, "%s (running %v):\n%s\n", p.name, r.running[p], tail(p.out.String(), 4000))
	}
	return b.String()
}

// live says whether the replica's server answers /healthz and /readyz.
func (p *replica) live() bool {
	return status(p.addr, "/healthz") == http.StatusOK && status(p.addr, "/readyz") == http.StatusOK
}

// call makes an API request with token and decodes a 200's answer into out
// (when not nil); it returns the status and body (0 when unreachable).
func (p *replica) call(t *testing.T, method, path, token, body string, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("decoding %s %s: %v\n%s", method, path, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// envView is what the tests read of GET /api/v1/environments/{env}.
type envView struct {
	Pending  *approval.Pending  `json:"pending"`
	InFlight *approval.InFlight `json:"inFlight"`
}

// view is env's view on p (empty when p does not answer it).
func (r *releaseFixture) view(t *testing.T, p *replica, env string) envView {
	t.Helper()
	var v envView
	p.call(t, "GET", "/api/v1/environments/"+env, r.apiToken, "", &v)
	return v
}

// history is env's history on p (none when p does not answer it).
func (r *releaseFixture) history(t *testing.T, p *replica, env string) []approval.Entry {
	t.Helper()
	var h struct {
		History []approval.Entry `json:"history"`
	}
	p.call(t, "GET", "/api/v1/environments/"+env+"/history", r.apiToken, "", &h)
	return h.History
}

// result is the result of env's newest history entry of rev on p ("" when none).
func (r *releaseFixture) result(t *testing.T, p *replica, env, rev string) string {
	t.Helper()
	for _, e := range r.history(t, p, env) {
		if e.Revision == rev {
			return e.Result
		}
	}
	return ""
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
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
