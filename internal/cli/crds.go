package cli

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"

	"github.com/stagehand-gitops/stagehand/internal/crds"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// applyCRDs brings Stagehand's CustomResourceDefinitions in the state
// cluster up to this build's (internal/crds): missing ones are created and
// older ones upgraded, newer ones left alone, so `helm upgrade` (which never
// upgrades crds/) and a rolling upgrade both end with the newest.
func applyCRDs(ctx context.Context, b *wire.Builder, log logr.Logger) error {
	c, err := b.Clients()
	if err != nil {
		return err
	}
	cfg := b.Config()
	rc, err := c.RESTConfig(cfg.State.Kubeconfig, cfg.State.Context)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	cs, err := apiextensions.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("building CRD client: %w", err)
	}
	res, err := crds.Apply(ctx, cs)
	if err != nil {
		return fmt.Errorf("applying CRDs (turn off with --apply-crds=false where they are managed otherwise): %w", err)
	}
	for _, r := range res {
		if r.Action == crds.Created || r.Action == crds.Upgraded {
			log.Info("applied CRD", "name", r.Name, "action", string(r.Action), "revision", r.Want, "was", r.Have)
		} else if r.Action == crds.Newer {
			log.Info("CRD left as a newer build put it", "name", r.Name, "revision", r.Have, "ours", r.Want)
		}
	}
	return nil
}
