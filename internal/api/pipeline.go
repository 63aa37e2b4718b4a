package api

import (
	"context"
	"errors"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// WithStages lists the environments of GET /api/v1/environments and
// /api/v1/matrix in stage order: stages returns pipeline.yaml's (the
// others follow in configuration order).
func WithStages(stages func(ctx context.Context) []string) Option {
	return func(o *options) error {
		if stages == nil {
			return errors.New("nil stages")
		}
		o.stages = stages
		return nil
	}
}

// WithPromotions adds to GET /api/v1/matrix what each promotion between
// adjacent stages waits for (internal/promotion).
func WithPromotions(p func(ctx context.Context) []status.Promotion) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("nil promotions")
		}
		o.promotions = p
		return nil
	}
}

// order is the environments in stage order, then the others.
func (h *handlers) order(ctx context.Context) []string {
	names := h.b.EnvironmentNames()
	if h.o.stages == nil {
		return names
	}
	return status.InStageOrder(names, h.o.stages(ctx))
}
