package argorollouts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

const label = "app.kubernetes.io/name"

var templateGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "analysistemplates"}

// analysisServer is what the web metric provider asks: {"ok": true} while
// pass is set, {"ok": false} otherwise. asked counts its requests.
type analysisServer struct {
	*httptest.Server
	pass  atomic.Bool
	asked atomic.Int64
}

func newAnalysisServer(t *testing.T, pass bool) *analysisServer {
	t.Helper()
	s := &analysisServer{}
	s.pass.Store(pass)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok": %t}`, s.pass.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

// createTemplate creates an AnalysisTemplate named name whose one metric
// asks url (the web provider) and succeeds when it answers ok: true.
func createTemplate(t *testing.T, dyn dynamic.Interface, ns, name, url string) {
	t.Helper()
	create(t, dyn, templateGVR, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: %s}
spec:
  args:
  - name: service
  metrics:
  - name: ok
    count: 1
    successCondition: result.ok == true
    failureLimit: 0
    provider:
      web:
        url: %s/{{args.service}}
        jsonPath: "{$}"
`, name, url))
}

// createRollout creates a Rollout labelled for service with 2 replicas of a
// pod running app=image, and the canary steps given (YAML flow list).
func createRollout(t *testing.T, dyn dynamic.Interface, ns, name, service, image, steps string) {
	t.Helper()
	create(t, dyn, reconcile.RolloutGVR, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: %[1]s, labels: {%[3]s: %[2]s}}
spec:
  replicas: 2
  revisionHistoryLimit: 2
  selector: {matchLabels: {match: %[1]s}}
  template:
    metadata: {labels: {match: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: %[4]q}]
  strategy:
    canary:
      steps: %[5]s
`, name, service, label, image, steps))
}

func create(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, doc string) {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func dynamicClient(t *testing.T, env *testenv.Env) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rolloutOf reads Rollout name: its image, status.phase and status.message.
func rolloutOf(t *testing.T, dyn dynamic.Interface, ns, name string) (image, phase, message string) {
	t.Helper()
	u, err := dyn.Resource(reconcile.RolloutGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) > 0 {
		image, _, _ = unstructured.NestedString(cs[0].(map[string]any), "image")
	}
	phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	message, _, _ = unstructured.NestedString(u.Object, "status", "message")
	return image, phase, message
}

// waitPhase waits until Rollout name is in phase.
func waitPhase(t *testing.T, dyn dynamic.Interface, ns, name, phase string) {
	t.Helper()
	testenv.WaitFor(t, 2*time.Minute, "Rollout "+name+" "+phase, func() bool {
		_, p, _ := rolloutOf(t, dyn, ns, name)
		return p == phase
	})
}

func environment(services ...manifest.Service) *manifest.Environment {
	return &manifest.Environment{Name: "test", Root: "environments/test/manifest.json", Services: services}
}

// svc is a manifest service with one container of image name:tag.
func svc(name, image, tag string) manifest.Service {
	return manifest.Service{Name: name, Source: "environments/test/manifest.json",
		Containers: []manifest.Container{{DockerName: image, DockerTag: tag}}}
}

func target(t *testing.T, env *testenv.Env, ns string) reconcile.Target {
	t.Helper()
	return reconcile.Target{Name: "a", Namespace: ns, Client: env.Clientset, Dynamic: dynamicClient(t, env)}
}

func newReconciler(t *testing.T, opts ...reconcile.Option) *reconcile.Reconciler {
	t.Helper()
	opts = append([]reconcile.Option{reconcile.WithPollInterval(200 * time.Millisecond), reconcile.WithRolloutTimeout(time.Minute)}, opts...)
	r, err := reconcile.New(opts...)
	if err != nil {
		t.Fatalf("reconcile.New: %v", err)
	}
	return r
}

// progressLog collects an apply's progress messages.
type progressLog struct {
	msgs chan string
}

func newProgressLog() *progressLog { return &progressLog{msgs: make(chan string, 1000)} }

func (p *progressLog) option() reconcile.Option {
	return reconcile.WithProgress(func(pr reconcile.Progress) {
		select {
		case p.msgs <- string(pr.Phase) + ": " + pr.Message:
		default:
		}
	})
}

// waitFor returns the first message containing s, failing after timeout.
func (p *progressLog) waitFor(t *testing.T, s string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case m := <-p.msgs:
			if strings.Contains(m, s) {
				return m
			}
			seen = append(seen, m)
		case <-deadline:
			t.Fatalf("no progress message containing %q within %s; saw %q", s, timeout, seen)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// events lists the messages of the Events of reason on object name.
func events(t *testing.T, c kubernetes.Interface, ns, name, reason string) []string {
	t.Helper()
	l, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		out = append(out, e.Message)
	}
	return out
}
