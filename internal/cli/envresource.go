package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// environmentResources hooks the Environment resources (internal/envresource)
// to the daemon: each environment's worker writes its Environment after each
// pass and decision, from what it recorded, only when it changed. Those no
// longer configured are deleted first. Without the environments CRD in the
// state cluster (--apply-crds=false and no chart's crds/) it says so and
// writes nothing. view is the daemon's environment view, set before the
// daemon runs.
func environmentResources(ctx context.Context, b *wire.Builder, view *envresource.ViewFunc, log logr.Logger) ([]daemon.Option, error) {
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
		return nil, nil
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building Environment client: %w", err)
	}
	w, err := envresource.New(dyn, cfg.State.Namespace, environmentSpecs(cfg), envresource.WithClock(b.StateClock().Now))
	if err != nil {
		return nil, err
	}
	gone, err := w.Prune(ctx)
	if err != nil {
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
	return []daemon.Option{daemon.WithRecordHook(hook)}, nil
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
