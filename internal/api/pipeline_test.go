package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// stagedBackend has devel, prod and staging, named in that (alphabetical)
// order as the configuration lists them.
type stagedBackend struct{ backend }

func (b *stagedBackend) EnvironmentNames() []string { return []string{"devel", "prod", "staging"} }

func (b *stagedBackend) Environment(_ context.Context, env string) (*status.Environment, error) {
	switch env {
	case "devel", "prod", "staging":
		return &status.Environment{Name: env}, nil
	}
	return nil, fmt.Errorf("%w %q", approval.ErrUnknownEnvironment, env)
}

// TestMatrixInStageOrder: with pipeline.yaml's stages, GET /api/v1/matrix and
// /api/v1/environments list the environments in stage order, and the matrix
// says what each promotion waits for.
func TestMatrixInStageOrder(t *testing.T) {
	waits := []status.Promotion{{From: "devel", To: "staging", Ready: []string{"web"}, Says: "ready: web"},
		{From: "staging", To: "prod", Says: "web soaking: healthy in staging for 20m0s of 1h0m0s"}}
	for _, tc := range []struct {
		name       string
		opts       []Option
		want       []string
		promotions []status.Promotion
	}{
		{name: "without a pipeline: the configuration's order", want: []string{"devel", "prod", "staging"}},
		{name: "in stage order, with the promotions", want: []string{"devel", "staging", "prod"}, promotions: waits,
			opts: []Option{WithStages(func(context.Context) []string { return []string{"devel", "staging", "prod"} }),
				WithPromotions(func(context.Context) []status.Promotion { return waits })}},
		{name: "an environment in no stage comes last", want: []string{"staging", "prod", "devel"},
			opts: []Option{WithStages(func(context.Context) []string { return []string{"staging", "prod", "qa"} })}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(&stagedBackend{}, append([]Option{withOps(t)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			c := newClient(t, srv, token)
			m, err := c.Matrix(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range m.Environments {
				got = append(got, e.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("matrix columns (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.promotions, m.Promotions); diff != "" {
				t.Errorf("promotions (-want +got):\n%s", diff)
			}
			envs, err := c.Environments(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got = nil
			for _, e := range envs {
				got = append(got, e.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("environments (-want +got):\n%s", diff)
			}
		})
	}
}
