package envresource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// GVR is the Environment resource.
var GVR = schema.GroupVersionResource{Group: "stagehand.io", Version: "v1alpha1", Resource: "environments"}

// FieldManager is the field manager of the Writer's server-side applies.
const FieldManager = "stagehand"

// ManagedByLabel marks the Environments the reconciler owns: it deletes
// those with the label that are no longer configured (Prune).
const ManagedByLabel = "app.kubernetes.io/managed-by"

// managedBy is ManagedByLabel's value.
const managedBy = "stagehand"

// Spec is what reconciler.yaml configures for an environment, as its
// Environment's spec shows it.
type Spec struct {
	LockPath string   `json:"lockPath,omitempty"`
	Targets  []Target `json:"targets,omitempty"`
}

// Target is a configured target.
type Target struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Context   string `json:"context,omitempty"`
}

// Writer writes the Environment objects of one state namespace: each is
// created (with its spec) the first time its environment is written, and
// its status written only when it differs from what the object holds.
// A Writer is safe for concurrent use by the workers of several
// environments.
type Writer struct {
	client    dynamic.ResourceInterface
	namespace string
	specs     map[string]Spec
	now       func() time.Time
	// events, when set, are emitted on the objects after each Write.
	events *Events

	mu   sync.Mutex
	objs map[string]*known
	// writes counts the writes made (spec applies, status applies, deletes).
	writes int64
}

// known is what the Writer knows an Environment object holds.
type known struct {
	term       string
	uid        types.UID
	generation int64
	conditions []metav1.Condition
	status     []byte // the status as last read or written, JSON
}

type options struct {
	now    func() time.Time
	events *Events
}

// Option configures New.
type Option func(*options) error

// WithClock stamps conditions' transition times with now (default
// time.Now; the daemon gives the API server's clock).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("WithClock: nil clock")
		}
		o.now = now
		return nil
	}
}

// WithEvents emits e's Events on the objects, after each Write of their
// environment (see Events).
func WithEvents(e *Events) Option {
	return func(o *options) error {
		if e == nil {
			return errors.New("WithEvents: nil Events")
		}
		o.events = e
		return nil
	}
}

// New returns the writer of the Environments in namespace, one per entry of
// specs (environment name → spec).
func New(client dynamic.Interface, namespace string, specs map[string]Spec, opts ...Option) (*Writer, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring Environment writer: %w", err)
		}
	}
	if client == nil || namespace == "" {
		return nil, errors.New("configuring Environment writer: a client and a namespace are required")
	}
	return &Writer{client: client.Resource(GVR).Namespace(namespace), namespace: namespace, specs: specs, now: o.now, events: o.events,
		objs: map[string]*known{}}, nil
}

// Writes is how many writes the Writer made so far.
func (w *Writer) Writes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// Write brings env's Environment up to v (with the daemon's phase for it):
// it creates the object when missing and writes its status when it
// differs from what the object holds; it writes nothing when nothing
// changed. t names the writer's hold of env (t.Name "" with one leader): in
// a new term the object is read again before it is compared; t.Holds is
// asked right before a write and refuses it when this replica's term is
// over (state.Store.Holds). It reports whether it wrote.
func (w *Writer) Write(ctx context.Context, v *status.Environment, phase status.Phase, t Term) (bool, error) {
	term := t.Name
	env := v.Name
	spec, ok := w.specs[env]
	if !ok {
		return false, fmt.Errorf("writing Environment %q: not configured", env)
	}
	w.mu.Lock()
	k := w.objs[env]
	w.mu.Unlock()
	wrote := false
	if k == nil || k.term != term {
		var err error
		if k, wrote, err = w.load(ctx, env, spec, t); err != nil {
			return wrote, err
		}
	}
	st := StatusOf(v, phase, Object{Generation: k.generation, Conditions: k.conditions}, w.now())
	raw, err := json.Marshal(st)
	if err != nil {
		return wrote, fmt.Errorf("encoding status of Environment %q: %w", env, err)
	}
	if bytes.Equal(raw, k.status) {
		w.emit(env, k, &st, &st)
		return wrote, nil
	}
	if err := t.Holds(ctx); err != nil {
		return wrote, fmt.Errorf("writing status of Environment %q: %w", env, err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": GVR.GroupVersion().String(), "kind": "Environment",
		"metadata": map[string]any{"name": env}, "status": json.RawMessage(raw),
	})
	if err != nil {
		return wrote, fmt.Errorf("encoding status of Environment %q: %w", env, err)
	}
	force := true
	obj, err := w.client.Patch(ctx, env, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, "status")
	w.count()
	if err != nil {
		w.forget(env)
		return true, fmt.Errorf("writing status of Environment %q: %w", env, err)
	}
	var prev Status
	if len(k.status) > 0 {
		if err := json.Unmarshal(k.status, &prev); err != nil {
			prev = Status{}
		}
	}
	w.emit(env, w.remember(env, term, obj, raw), &prev, &st)
	return true, nil
}

// Term is a writer's hold of an environment: its Name ("" with one
// leader), and Holds, asked right before a write, which refuses it when the
// term is over (state.Store.Holds).
type Term struct {
	Name  string
	Holds func(context.Context) error
}

// load reads env's object (creating it, or applying its spec when it
// differs from the configured one) under t and remembers what it holds.
func (w *Writer) load(ctx context.Context, env string, spec Spec, t Term) (*known, bool, error) {
	term, holds := t.Name, t.Holds
	obj, err := w.client.Get(ctx, env, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("reading Environment %q: %w", env, err)
	}
	wrote := false
	if err != nil || !sameSpec(obj, spec) || obj.GetLabels()[ManagedByLabel] != managedBy {
		if err := holds(ctx); err != nil {
			return nil, false, fmt.Errorf("writing Environment %q: %w", env, err)
		}
		body, err := json.Marshal(map[string]any{
			"apiVersion": GVR.GroupVersion().String(), "kind": "Environment",
			"metadata": map[string]any{"name": env, "labels": map[string]string{ManagedByLabel: managedBy}},
			"spec":     spec,
		})
		if err != nil {
			return nil, false, fmt.Errorf("encoding Environment %q: %w", env, err)
		}
		force := true
		obj, err = w.client.Patch(ctx, env, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
		w.count()
		wrote = true
		if err != nil {
			return nil, wrote, fmt.Errorf("creating Environment %q: %w", env, err)
		}
	}
	raw, err := statusJSON(obj)
	if err != nil {
		return nil, wrote, fmt.Errorf("reading status of Environment %q: %w", env, err)
	}
	return w.remember(env, term, obj, raw), wrote, nil
}

// remember keeps what obj holds, its status as raw.
func (w *Writer) remember(env, term string, obj *unstructured.Unstructured, raw []byte) *known {
	k := &known{term: term, uid: obj.GetUID(), generation: obj.GetGeneration(), status: raw}
	var st Status
	if err := json.Unmarshal(raw, &st); err == nil {
		k.conditions = st.Conditions
	}
	w.mu.Lock()
	w.objs[env] = k
	w.mu.Unlock()
	return k
}

// emit emits the Events of env on its object k, after a write that moved
// its status from prev to next (equal: nothing written).
func (w *Writer) emit(env string, k *known, prev, next *Status) {
	if w.events == nil || k.uid == "" {
		return
	}
	w.events.emit(env, objectRef(w.namespace, env, k.uid), prev, next)
}

func (w *Writer) forget(env string) {
	w.mu.Lock()
	delete(w.objs, env)
	w.mu.Unlock()
}

func (w *Writer) count() {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
}

// statusJSON is obj's status re-encoded as a Status, so that it compares
// with a computed one byte for byte.
func statusJSON(obj *unstructured.Unstructured) ([]byte, error) {
	m, ok, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil || !ok {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// sameSpec reports whether obj's spec is spec.
func sameSpec(obj *unstructured.Unstructured, spec Spec) bool {
	m, _, _ := unstructured.NestedMap(obj.Object, "spec")
	have, err := json.Marshal(m)
	if err != nil {
		return false
	}
	var got Spec
	if err := json.Unmarshal(have, &got); err != nil {
		return false
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(spec)
	return bytes.Equal(a, b)
}

// Prune deletes the Environments the reconciler made whose environment is
// no longer configured, and returns their names.
func (w *Writer) Prune(ctx context.Context) ([]string, error) {
	list, err := w.client.List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + managedBy})
	if err != nil {
		return nil, fmt.Errorf("listing Environments: %w", err)
	}
	var gone []string
	for _, o := range list.Items {
		if _, ok := w.specs[o.GetName()]; ok {
			continue
		}
		uid := o.GetUID()
		err := w.client.Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		w.count()
		if err != nil && !apierrors.IsNotFound(err) {
			return gone, fmt.Errorf("deleting Environment %q (no longer configured): %w", o.GetName(), err)
		}
		gone = append(gone, o.GetName())
	}
	sort.Strings(gone)
	return gone, nil
}
