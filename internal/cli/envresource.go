package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// environmentResources hooks the Environment resources (internal/envresource)
// to the daemon: each environment's worker writes its Environment after each
// pass and decision, from what it recorded, only when it changed, and its
// Events tell the environment's story on it. Those no
// longer configured are deleted first. Without the environments CRD in the
// state cluster (--apply-crds=false and no chart's crds/) it says so and
// writes nothing. view is the daemon's environment view, set before the
// daemon runs.
func environmentResources(ctx context.Context, b *wire.Builder, view *envresource.ViewFunc, log logr.Logger) (*envResources, error) {
	cfg := b.Config()
	c, err := b.Clients()
	if err != nil {
		return nil, err
	}
	rc, err := c.RESTConfig(cfg.State.Kubeconfig, cfg.State.Context)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	if res, err := dc.ServerResourcesForGroupVersion(envresource.GVR.GroupVersion().String()); err != nil ||
		!slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == envresource.GVR.Resource }) {
		log.Info("no Environment resources: the environments.stagehand.io CRD is not served (reconciler run --apply-crds installs it)", "error", fmt.Sprint(err))
		return &envResources{stop: func() {}}, nil
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building Environment client: %w", err)
	}
	kc, err := c.Client(cfg.State.Kubeconfig, cfg.State.Context)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	// core/v1 Events: their recorder counts identical Events into one and keeps
	// those whose messages differ, which events.k8s.io/v1's folds into the first
	// of a series (its key has no message) for six minutes. Its spam filter
	// (25 per object, then one per five minutes) is widened: an environment's
	// story is a handful of Events per deploy.
	eb := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 200, QPS: 1}))
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kc.CoreV1().Events(cfg.State.Namespace)})
	events := envresource.NewEvents(eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: envresource.EventSource}))
	w, err := envresource.New(dyn, cfg.State.Namespace, environmentSpecs(cfg), envresource.WithClock(b.StateClock().Now),
		envresource.WithEvents(events))
	if err != nil {
		eb.Shutdown()
		return nil, err
	}
	gone, err := w.Prune(ctx)
	if err != nil {
		eb.Shutdown()
		return nil, err
	}
	if len(gone) > 0 {
		log.Info("deleted Environments no longer configured", "environments", gone)
	}
	hook := w.Hook(func(ctx context.Context, env string) (*status.Environment, status.Phase, error) {
		return (*view)(ctx, env)
	}, func(env string, err error) {
		log.Error(err, "writing Environment resource", "environment", env)
	})
	return &envResources{hook: hook, events: events, stop: eb.Shutdown}, nil
}

// envResources is what environmentResources hooks to the daemon: the record
// hook and the Events that hear the gate and the sequences (both nil without
// the CRD); stop ends the Events' broadcaster once the daemon stopped.
type envResources struct {
	hook   daemon.RecordHook
	events *envresource.Events
	stop   func()
}

// environmentSpecs are the Environments' specs: what reconciler.yaml says.
func environmentSpecs(cfg *config.Config) map[string]envresource.Spec {
	out := map[string]envresource.Spec{}
	for name, ec := range cfg.Environments {
		s := envresource.Spec{LockPath: ec.LockPath}
		for _, t := range ec.Targets {
			s.Targets = append(s.Targets, envresource.Target{Name: t.Name, Namespace: t.Namespace, Context: t.Context})
		}
		out[name] = s
	}
	return out
}
