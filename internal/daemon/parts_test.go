package daemon

import (
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/wire"
)

// build makes a daemon as `reconciler run` composes it (internal/cli): its
// parts built once by internal/wire's Builder from cfg and wopts (where the
// clusters are, the git cache, the reconciler's settings, the local clock),
// then New with opts.
func build(cfg *config.Config, wopts []wire.Option, opts ...Option) (*Daemon, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring daemon: %w", err)
		}
	}
	if o.identity == "" {
		o.identity = DefaultIdentity()
		opts = append(opts, WithIdentity(o.identity))
	}
	b, err := wire.New(cfg, append(wire.DaemonOptions(o.identity, o.log), wopts...)...)
	if err != nil {
		return nil, err
	}
	parts, err := PartsOf(b)
	if err != nil {
		return nil, err
	}
	return New(cfg, append(parts, opts...)...)
}
