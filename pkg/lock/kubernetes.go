package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var (
	_ Storage      = (*Kubernetes)(nil)
	_ batchGetter  = (*Kubernetes)(nil)
	_ cachedLister = (*Kubernetes)(nil)
)

// Resource is the Kubernetes resource of a lock (CRD in pkg/lock/crd).
var Resource = schema.GroupVersionResource{Group: "stagehand.io", Version: "v1alpha1", Resource: "locks"}

const (
	kind       = "Lock"
	pathLabel  = "stagehand.io/lock-path-hash"
	managedBy  = "app.kubernetes.io/managed-by"
	crdMissing = "is the locks.stagehand.io CustomResourceDefinition installed? (pkg/lock/crd)"
)

// Kubernetes stores locks as locks.stagehand.io objects in one namespace.
// Creation goes through the API server, which lets exactly one of concurrent
// creators of a name succeed; replacements and deletions carry the UID and
// resourceVersion as preconditions.
type Kubernetes struct {
	client    dynamic.NamespaceableResourceInterface
	events    dynamic.NamespaceableResourceInterface
	namespace string
}

// NewKubernetes returns a storage using client in namespace.
func NewKubernetes(client dynamic.Interface, namespace string) (*Kubernetes, error) {
	if client == nil {
		return nil, errors.New("creating kubernetes lock storage: client is required")
	}
	if namespace == "" {
		return nil, errors.New("creating kubernetes lock storage: namespace is required")
	}
	return &Kubernetes{client: client.Resource(Resource), events: client.Resource(eventsResource), namespace: namespace}, nil
}

// NewKubernetesForConfig returns a storage talking to the API server of cfg.
func NewKubernetesForConfig(cfg *rest.Config, namespace string) (*Kubernetes, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating kubernetes lock storage: %w", err)
	}
	return NewKubernetes(c, namespace)
}

func pathHash(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:])[:10]
}

// ObjectName returns the name of the object holding the lock at path: the
// path with "/" as ".", each label trimmed of leading and trailing "-" and
// the whole shortened to fit, then "-" and a hash of the path, so that
// distinct paths never share a name: apps/staging/a → apps.staging.a-1f2e3d4c5b.
func ObjectName(path string) string {
	const max = 253 - 11
	labels := strings.Split(path, "/")
	keep := []string{}
	n := 0
	for _, l := range labels {
		l = strings.Trim(l, "-")
		if len(l) > 63 {
			l = strings.TrimRight(l[:63], "-")
		}
		if l == "" {
			continue
		}
		if n+len(l)+1 > max {
			break
		}
		keep = append(keep, l)
		n += len(l) + 1
	}
	base := strings.Join(keep, ".")
	if base == "" {
		base = "lock"
	}
	// The hash's label may not start with "-": join with "-" onto the last label.
	return base + "-" + pathHash(path)
}

func (k *Kubernetes) res() dynamic.ResourceInterface { return k.client.Namespace(k.namespace) }

func wrap(verb, path string, err error) error {
	switch {
	case apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource"):
		return fmt.Errorf("%s lock %s: %w; %s", verb, path, err, crdMissing)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s lock %s: %w", verb, path, ErrNotFound)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s lock %s: %w", verb, path, ErrExists)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s lock %s: %w", verb, path, ErrConflict)
	}
	return fmt.Errorf("%s lock %s: %w", verb, path, err)
}

func toObject(l Lock) *unstructured.Unstructured {
	spec := map[string]any{
		"path":      l.Path,
		"type":      string(l.Type),
		"author":    l.Author,
		"createdAt": l.CreatedAt.UTC().Format(time.RFC3339Nano),
		"updatedAt": l.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"expiresAt": l.ExpiresAt.UTC().Format(time.RFC3339),
		"env":       map[string]any{"cluster": l.Env.Cluster, "account": l.Env.Account, "target": l.Env.Target},
	}
	if !l.ExpiresAt.Equal(l.ExpiresAt.Truncate(time.Second)) {
		spec["expiresAt"] = l.ExpiresAt.UTC().Format(time.RFC3339Nano) // Service rounds to seconds; other writers may not
	}
	if len(l.Links) > 0 {
		links := map[string]any{}
		for k, v := range l.Links {
			links[k] = v
		}
		spec["links"] = links
	}
	if len(l.Allow) > 0 {
		allow := make([]any, len(l.Allow))
		for i, a := range l.Allow {
			allow[i] = string(a)
		}
		spec["allow"] = allow
	}
	if l.CI != nil {
		spec["ci"] = map[string]any{"project": l.CI.Project, "ref": l.CI.Ref, "commit": l.CI.Commit, "pipeline": l.CI.Pipeline, "job": l.CI.Job}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(Resource.GroupVersion().String())
	u.SetKind(kind)
	u.SetName(ObjectName(l.Path))
	u.SetLabels(map[string]string{pathLabel: pathHash(l.Path), managedBy: "stagehand"})
	return u
}

func fromObject(u *unstructured.Unstructured) (Lock, error) {
	str := func(fields ...string) string {
		s, _, _ := unstructured.NestedString(u.Object, append([]string{"spec"}, fields...)...)
		return s
	}
	tm := func(field string) (time.Time, error) {
		v := str(field)
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("object %s: spec.%s %q: %w", u.GetName(), field, v, err)
		}
		return t.UTC(), nil
	}
	l := Lock{
		Path: str("path"), Type: Type(str("type")), Author: str("author"),
		Env: Env{Cluster: str("env", "cluster"), Account: str("env", "account"), Target: str("env", "target")},
		ID:  string(u.GetUID()), Version: u.GetResourceVersion(),
	}
	var err error
	if l.CreatedAt, err = tm("createdAt"); err != nil {
		return Lock{}, err
	}
	if l.UpdatedAt, err = tm("updatedAt"); err != nil {
		return Lock{}, err
	}
	if l.ExpiresAt, err = tm("expiresAt"); err != nil {
		return Lock{}, err
	}
	if links, ok, _ := unstructured.NestedStringMap(u.Object, "spec", "links"); ok {
		l.Links = links
	}
	if allow, ok, _ := unstructured.NestedStringSlice(u.Object, "spec", "allow"); ok {
		for _, a := range allow {
			l.Allow = append(l.Allow, Type(a))
		}
	}
	if _, ok, _ := unstructured.NestedMap(u.Object, "spec", "ci"); ok {
		l.CI = &CI{Project: str("ci", "project"), Ref: str("ci", "ref"), Commit: str("ci", "commit"), Pipeline: str("ci", "pipeline"), Job: str("ci", "job")}
	}
	return l, nil
}

// Get implements Storage. A lock is found by its object name (ObjectName),
// with a consistent read, or, failing that, among the objects without
// Stagehand's labels by spec.path: a Lock object someone made by hand, say
// with kubectl or from a GitOps repository, under a name of their own.
//
// Those are listed from the API server's watch cache as it stands
// (resourceVersion "0"), and one that matches is read again by its name (a
// consistent read). A consistent list would wait for the watch cache to catch
// up with etcd, which, when other resources were written since the last Lock
// event, means waiting for etcd's next progress notification: about 100 ms
// for every Get of an absent lock, on the deploy's hot path. The cost: a Lock
// object made by hand in the instant (the cache's lag, milliseconds) before a
// Get may be missed by that Get. Locks Stagehand writes are always found;
// Create still lists hand-made objects consistently, and checks (GetAll, List,
// which the lock checks of pkg/reconcile's Apply use) are consistent reads.
func (k *Kubernetes) Get(ctx context.Context, path string) (Lock, error) {
	u, err := k.res().Get(ctx, ObjectName(path), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return k.getHandMade(ctx, path, err)
	}
	if err != nil {
		return Lock{}, wrap("getting", path, err)
	}
	l, err := fromObject(u)
	if err != nil {
		return Lock{}, fmt.Errorf("getting lock %s: %w", path, err)
	}
	if l.Path != path {
		return Lock{}, fmt.Errorf("getting lock %s: object %s holds path %q", path, u.GetName(), l.Path)
	}
	return l, nil
}

// getHandMade finds the Lock object made by hand at path (see Get); notFound
// is the error of the read by ObjectName.
func (k *Kubernetes) getHandMade(ctx context.Context, path string, notFound error) (Lock, error) {
	list, err := k.res().List(ctx, metav1.ListOptions{LabelSelector: "!" + pathLabel, ResourceVersion: "0"})
	if err != nil {
		return Lock{}, wrap("getting", path, err)
	}
	for i := range list.Items {
		l, err := fromObject(&list.Items[i])
		if err != nil {
			return Lock{}, fmt.Errorf("getting lock %s: %w", path, err)
		}
		if l.Path != path {
			continue
		}
		// The cache's copy may be behind: read it again, consistently.
		u, err := k.res().Get(ctx, list.Items[i].GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deleted since
		}
		if err != nil {
			return Lock{}, wrap("getting", path, err)
		}
		if l, err = fromObject(u); err != nil {
			return Lock{}, fmt.Errorf("getting lock %s: %w", path, err)
		}
		if l.Path == path {
			return l, nil
		}
	}
	return Lock{}, wrap("getting", path, notFound)
}

// List implements Storage.
func (k *Kubernetes) List(ctx context.Context, prefix string) ([]Lock, error) {
	return k.listWithin(ctx, prefix, "")
}

// ListCached is List served from the API server's watch cache as it stands
// (resourceVersion 0): no wait for the cache to catch up with etcd, which
// under a burst of writes (a 500-workload apply) makes each consistent list
// take tens of milliseconds. It may miss a lock written a moment ago.
func (k *Kubernetes) ListCached(ctx context.Context, prefix string) ([]Lock, error) {
	return k.listWithin(ctx, prefix, "0")
}

func (k *Kubernetes) listWithin(ctx context.Context, prefix, resourceVersion string) ([]Lock, error) {
	all, err := k.list(ctx, "", resourceVersion)
	if err != nil {
		return nil, wrap("listing", prefix+"/...", err)
	}
	out := []Lock{}
	for _, l := range all {
		if within(l.Path, prefix) {
			out = append(out, l)
		}
	}
	sortLocks(out)
	return out, nil
}

// GetAll returns the locks at any of paths with two lists: Stagehand's
// objects selected by their path-hash label, and the Lock objects without
// that label, made by hand (with kubectl, or applied from a GitOps
// repository), which must block all the same.
func (k *Kubernetes) GetAll(ctx context.Context, paths []string) ([]Lock, error) {
	hashes := make([]string, 0, len(paths))
	for _, p := range paths {
		if h := pathHash(p); !slices.Contains(hashes, h) {
			hashes = append(hashes, h)
		}
	}
	var (
		handMade []Lock
		herr     error
		done     = make(chan struct{})
	)
	go func() { // at the same time: a check waits for one round trip, not two
		defer close(done)
		handMade, herr = k.list(ctx, "!"+pathLabel, "")
	}()
	labelled, err := k.list(ctx, fmt.Sprintf("%s in (%s)", pathLabel, strings.Join(hashes, ",")), "")
	<-done
	if err = errors.Join(err, herr); err != nil {
		return nil, wrap("getting", strings.Join(paths, ", "), err)
	}
	out := []Lock{}
	for _, l := range append(labelled, handMade...) {
		if slices.Contains(paths, l.Path) {
			out = append(out, l)
		}
	}
	sortLocks(out)
	return out, nil
}

// list lists the namespace's Lock objects matching selector ("" for all), at
// resourceVersion ("" for the newest: a consistent read).
func (k *Kubernetes) list(ctx context.Context, selector, resourceVersion string) ([]Lock, error) {
	var out []Lock
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500, ResourceVersion: resourceVersion}
	for {
		list, err := k.res().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			l, err := fromObject(&list.Items[i])
			if err != nil {
				return nil, fmt.Errorf("reading locks: %w", err)
			}
			out = append(out, l)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// handMade returns the name of the object with old's UID when it is not
// ObjectName(old.Path): a Lock object made by hand under a name of its own.
func (k *Kubernetes) handMade(ctx context.Context, old Lock) (string, bool) {
	list, err := k.res().List(ctx, metav1.ListOptions{LabelSelector: "!" + pathLabel})
	if err != nil {
		return "", false
	}
	for _, u := range list.Items {
		if string(u.GetUID()) == old.ID && u.GetName() != ObjectName(old.Path) {
			return u.GetName(), true
		}
	}
	return "", false
}

// Create implements Storage. The API server refuses a second object of the
// same name; a Lock object made by hand at l.Path under another name is
// looked for first.
func (k *Kubernetes) Create(ctx context.Context, l Lock) (Lock, error) {
	handMade, err := k.list(ctx, "!"+pathLabel, "")
	if err != nil {
		return Lock{}, wrap("creating", l.Path, err)
	}
	for _, o := range handMade {
		if o.Path == l.Path {
			return Lock{}, fmt.Errorf("creating lock %s: %w", l.Path, ErrExists)
		}
	}
	u, err := k.res().Create(ctx, toObject(l), metav1.CreateOptions{})
	if err != nil {
		var se apierrors.APIStatus
		if apierrors.IsNotFound(err) && errors.As(err, &se) && se.Status().Details != nil && se.Status().Details.Kind == "namespaces" {
			return Lock{}, fmt.Errorf("creating lock %s: namespace %q does not exist: create it, or keep locks in another (the reconciler's locks.namespace, the CLI's --namespace)",
				l.Path, k.namespace)
		}
		return Lock{}, wrap("creating", l.Path, err)
	}
	return fromObject(u)
}

// Replace implements Storage: an update carrying old's resourceVersion (and
// checked against its UID), so a lock changed meanwhile is never overwritten.
func (k *Kubernetes) Replace(ctx context.Context, old, l Lock) (Lock, error) {
	if l.Path != old.Path {
		return Lock{}, fmt.Errorf("replacing lock %s: path changed to %s: %w", old.Path, l.Path, ErrConflict)
	}
	u := toObject(l)
	u.SetUID(types.UID(old.ID))
	u.SetResourceVersion(old.Version)
	got, err := k.res().Update(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		if name, ok := k.handMade(ctx, old); ok {
			u.SetName(name)
			got, err = k.res().Update(ctx, u, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return Lock{}, wrap("replacing", l.Path, err)
	}
	return fromObject(got)
}

// Delete implements Storage, with UID and resourceVersion preconditions.
func (k *Kubernetes) Delete(ctx context.Context, old Lock) error {
	uid, rv := types.UID(old.ID), old.Version
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
	err := k.res().Delete(ctx, ObjectName(old.Path), opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		if name, ok := k.handMade(ctx, old); ok {
			err = k.res().Delete(ctx, name, opts)
		}
	}
	if err != nil {
		return wrap("deleting", old.Path, err)
	}
	return nil
}
