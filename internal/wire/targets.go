package wire

import (
	"fmt"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Recorders makes the Event recorder of a target from its client.
type Recorders func(kubernetes.Interface) (record.EventRecorder, error)

// Targets returns the reconcile targets of environment env of cfg, in the
// configured order, each with the cached client of its kubeconfig and
// context (and, when the environment sets rollouts, the dynamic client
// that reads Argo Rollouts' Rollouts); with recorders set, each also gets recorders(client) as its
// Recorder (nil: reconcile writes Events through the client itself).
func (c *Clients) Targets(cfg *config.Config, env string, recorders Recorders) ([]reconcile.Target, error) {
	e, ok := cfg.Environments[env]
	if !ok {
		return nil, fmt.Errorf("environments.%s: not configured; configured: %v", env, cfg.EnvironmentNames())
	}
	out := make([]reconcile.Target, 0, len(e.Targets))
	for i, t := range e.Targets {
		cs, err := c.targetClient(cfg, t, fmt.Sprintf("environments.%s.targets[%d]", env, i))
		if err != nil {
			return nil, fmt.Errorf("environments.%s.targets[%d]: %w", env, i, err)
		}
		tg := reconcile.Target{Name: t.Name, Namespace: t.Namespace, Client: cs}
		if e.Rollouts != nil { // Argo Rollouts' Rollouts are workloads of the environment
			if tg.Dynamic, err = c.targetDynamic(cfg, t, fmt.Sprintf("environments.%s.targets[%d]", env, i)); err != nil {
				return nil, fmt.Errorf("environments.%s.targets[%d]: %w", env, i, err)
			}
		}
		if recorders != nil {
			if tg.Recorder, err = recorders(cs); err != nil {
				return nil, fmt.Errorf("environments.%s.targets[%d]: event recorder: %w", env, i, err)
			}
		}
		out = append(out, tg)
	}
	return out, nil
}

// EventRecorders is the daemon's recorder of each target: fluxcd's
// events.Recorder (which logs each Event at trace level, as controller)
// over a reconcile.EventWriter reporting as instance, which writes each
// Event before returning so none is queued and lost.
func EventRecorders(log logr.Logger, instance, controller string) Recorders {
	if log.GetSink() == nil { // logr.Discard(): fluxcd's Recorder asks the sink whether tracing is on
		log = funcr.New(func(string, string) {}, funcr.Options{})
	}
	return func(c kubernetes.Interface) (record.EventRecorder, error) {
		return events.NewRecorderForScheme(scheme.Scheme, reconcile.NewEventWriter(c, instance), log, "", controller)
	}
}
