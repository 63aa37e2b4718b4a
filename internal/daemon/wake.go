package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-gitops/stagehand/internal/state"
)

// A push webhook may reach any replica, but only the leader polls the
// source. A replica that does not lead records the push as a wake-up: it
// sets one annotation on the ConfigMap WakeConfigMapName in the state
// namespace; the leader watches that ConfigMap and polls at once on every
// change.
const (
	// WakeConfigMapName is the ConfigMap a standby annotates to wake the
	// leader (it holds no data).
	WakeConfigMapName = "stagehand-wake"
	annoWake          = "stagehand.io/wake"

	wakeWriteTimeout = 5 * time.Second
	wakeRetry        = time.Second
)

// pushed is the push webhook's trigger: the leader polls now; any other
// replica wakes the leader. With leaderElection.perEnvironment the replica
// polls and wakes all others (each holds some environments).
func (d *Daemon) pushed() {
	if d.shard != nil {
		// Every replica polls, and each works only what it holds: poll
		// here, and wake the holders of the others.
		d.source.Trigger()
	} else if d.leading.Load() {
		d.source.Trigger()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wakeWriteTimeout)
	defer cancel()
	if err := d.wakeLeader(ctx); err != nil {
		d.log.Error(err, "push not handed to the leader: it will be seen at the next poll")
		return
	}
	d.log.V(1).Info("push handed to the leader")
}

// wakeLeader sets the wake annotation (a merge patch of that one key, so
// concurrent writers never conflict), creating the ConfigMap when missing.
func (d *Daemon) wakeLeader(ctx context.Context) error {
	value := d.clock.Now().UTC().Format(time.RFC3339Nano) + " " + d.o.identity
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annoWake: value}}})
	if err != nil {
		return fmt.Errorf("encoding wake-up: %w", err)
	}
	cms := d.store.Client().CoreV1().ConfigMaps(d.store.Namespace())
	for range 2 {
		_, err = cms.Patch(ctx, WakeConfigMapName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "stagehand"})
		if !apierrors.IsNotFound(err) {
			break
		}
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: WakeConfigMapName, Namespace: d.store.Namespace(),
			Labels:      map[string]string{state.LabelManagedBy: "stagehand", state.LabelComponent: "wake"},
			Annotations: map[string]string{annoWake: value},
		}}, metav1.CreateOptions{FieldManager: "stagehand"})
		if !apierrors.IsAlreadyExists(err) {
			break // created, or failed; on AlreadyExists another replica won: patch it
		}
	}
	if err != nil {
		return fmt.Errorf("waking the leader through configmap %s/%s: %w", d.store.Namespace(), WakeConfigMapName, err)
	}
	return nil
}

// watchWake runs while this replica leads: every change of the wake
// ConfigMap triggers a poll. When the watch has to be listed again (it
// expired or failed), a wake-up may have been missed, so it polls then too.
func (d *Daemon) watchWake(ctx context.Context) {
	cms := d.store.Client().CoreV1().ConfigMaps(d.store.Namespace())
	sel := fields.OneTermEqualSelector("metadata.name", WakeConfigMapName).String()
	rv, listed := "", false
	for ctx.Err() == nil {
		if rv == "" {
			list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				d.wakeFailed(ctx, fmt.Errorf("listing configmap %s: %w", WakeConfigMapName, err))
				continue
			}
			if listed {
				d.source.Trigger()
			}
			rv, listed = list.ResourceVersion, true
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
				continue
			}
			d.wakeFailed(ctx, fmt.Errorf("watching configmap %s: %w", WakeConfigMapName, err))
			continue
		}
		rv, err = d.consumeWake(w, rv)
		w.Stop()
		if err != nil {
			d.wakeFailed(ctx, err)
		}
	}
}

// consumeWake triggers a poll for every change until the watch ends and
// returns the resourceVersion to watch from next ("" to list again) and the
// error the watch ended with, if any.
func (d *Daemon) consumeWake(w watch.Interface, rv string) (string, error) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			d.source.Trigger()
		case watch.Error:
			if st := apierrors.FromObject(ev.Object); !apierrors.IsGone(st) && !apierrors.IsResourceExpired(st) {
				return "", fmt.Errorf("watching configmap %s: %w", WakeConfigMapName, st)
			}
			return "", nil
		}
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.ResourceVersion != "" {
			rv = cm.ResourceVersion // bookmarks included
		}
	}
	return rv, nil
}

// wakeFailed logs err and waits before the watch is tried again. Once ctx
// has ended (a shutdown, or the Lease lost) the watch ended because of it:
// nothing failed, and nothing is logged.
func (d *Daemon) wakeFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	d.log.Error(err, "not watching for wake-ups from other replicas; retrying")
	select {
	case <-ctx.Done():
	case <-time.After(wakeRetry):
	}
}
