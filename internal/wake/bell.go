package wake

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

const (
	// ConfigMapName is the ConfigMap a replica annotates to wake the
	// pollers (it holds no data).
	ConfigMapName = "stagehand-wake"
	// Annotation is the annotation set: the time and the ringing replica's identity.
	Annotation = "stagehand.io/wake"

	retry = time.Second
)

// Bell is the wake ConfigMap of one state namespace, as one replica rings
// and watches it.
type Bell struct {
	Client    kubernetes.Interface
	Namespace string
	// Identity is this replica's, written in the annotation.
	Identity string
	// Now is the API server's clock.
	Now func() time.Time
	Log logr.Logger
}

// Ring sets the wake annotation, creating the ConfigMap when missing.
func (b *Bell) Ring(ctx context.Context) error {
	value := b.Now().UTC().Format(time.RFC3339Nano) + " " + b.Identity
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{Annotation: value}}})
	if err != nil {
		return fmt.Errorf("encoding wake-up: %w", err)
	}
	cms := b.Client.CoreV1().ConfigMaps(b.Namespace)
	for range 2 {
		_, err = cms.Patch(ctx, ConfigMapName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "stagehand"})
		if !apierrors.IsNotFound(err) {
			break
		}
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: ConfigMapName, Namespace: b.Namespace,
			Labels:      map[string]string{state.LabelManagedBy: "stagehand", state.LabelComponent: "wake"},
			Annotations: map[string]string{Annotation: value},
		}}, metav1.CreateOptions{FieldManager: "stagehand"})
		if !apierrors.IsAlreadyExists(err) {
			break // created, or failed; on AlreadyExists another replica won: patch it
		}
	}
	if err != nil {
		return fmt.Errorf("waking the leader through configmap %s/%s: %w", b.Namespace, ConfigMapName, err)
	}
	return nil
}

// Watch calls rung for every change of the wake ConfigMap (a replica rang
// it) until ctx ends. After every list, the first included, it calls missed:
// a wake-up rung before the list (the replica was not watching yet: it has
// just begun to lead, or the watch expired or failed) may have been missed,
// and the poll missed asks for costs one fetch. (rung is told of pushes;
// missed is not: nobody is known to have pushed.)
func (b *Bell) Watch(ctx context.Context, rung, missed func()) {
	cms := b.Client.CoreV1().ConfigMaps(b.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				b.failed(ctx, fmt.Errorf("listing configmap %s: %w", ConfigMapName, err))
				continue
			}
			missed()
			rv = list.ResourceVersion
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
				continue
			}
			b.failed(ctx, fmt.Errorf("watching configmap %s: %w", ConfigMapName, err))
			continue
		}
		rv, err = consume(w, rv, rung)
		w.Stop()
		if err != nil {
			b.failed(ctx, err)
		}
	}
}

// consume calls poll for every change until the watch ends and returns the
// resourceVersion to watch from next ("" to list again) and the error the
// watch ended with, if any.
func consume(w watch.Interface, rv string, poll func()) (string, error) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			poll()
		case watch.Error:
			if st := apierrors.FromObject(ev.Object); !apierrors.IsGone(st) && !apierrors.IsResourceExpired(st) {
				return "", fmt.Errorf("watching configmap %s: %w", ConfigMapName, st)
			}
			return "", nil
		}
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.ResourceVersion != "" {
			rv = cm.ResourceVersion // bookmarks included
		}
	}
	return rv, nil
}

// failed logs err and waits before the watch is tried again. Once ctx has
// ended (a shutdown, or the Lease lost) the watch ended because of it:
// nothing failed, and nothing is logged.
func (b *Bell) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	b.Log.Error(err, "not watching for wake-ups from other replicas; retrying")
	select {
	case <-ctx.Done():
	case <-time.After(retry):
	}
}
