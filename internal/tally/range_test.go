package tally

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// ranger answers Range with r (or err), recording the ranges asked.
type ranger struct {
	r     gitsource.Range
	err   error
	asked []string
}

func (g *ranger) Range(_ context.Context, base, head string) (gitsource.Range, error) {
	g.asked = append(g.asked, base+".."+head)
	return g.r, g.err
}

// TestRulesReadRange: rules reading revision.files and revision.trailers get them from the git source,
// over the commits since the last applied revision; a source that cannot list them refuses every
// approval, and rules that read neither never ask.
func TestRulesReadRange(t *testing.T) {
	ctx := context.Background()
	compiler, err := policy.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := policy.NewSet(compiler, []policy.Rule{
		{Name: "prod-paths", When: `revision.files.exists(f, f.startsWith("environments/prod/"))`, Required: 2, Message: "prod paths need two"},
		{Name: "risky", When: `"Change-Risk" in revision.trailers && "high" in revision.trailers["Change-Risk"]`, Required: 3, Message: "high risk needs three"},
	})
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := json.Marshal(reconcile.Plan{Environment: "prod", PlanHash: "sha256:01"})
	st := func() *memStore {
		return &memStore{st: state.EnvState{Pending: &approval.Pending{Revision: "r2", PlanHash: "sha256:01", Plan: plan, Required: 1},
			History: []approval.Entry{{Revision: "r1", Result: approval.ResultSucceeded}}}}
	}
	now := func() time.Time { return time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name     string
		r        gitsource.Range
		err      error
		required int
		reasons  []string
		refused  string
	}{
		{name: "neither applies", r: gitsource.Range{Files: []string{"environments/devel/manifest.json"}, Trailers: map[string][]string{"Change-Risk": {"low"}}},
			required: 1},
		{name: "a prod path", r: gitsource.Range{Files: []string{"environments/prod/manifest.json"}}, required: 2, reasons: []string{"prod paths need two"}},
		{name: "a high-risk trailer too", r: gitsource.Range{Files: []string{"environments/prod/manifest.json"}, Trailers: map[string][]string{"Change-Risk": {"low", "high"}}},
			required: 3, reasons: []string{"prod paths need two", "high risk needs three"}},
		{name: "the source cannot list them", err: errors.New("listing what r1..r2 changes: more than 10000 files"),
			refused: "listing the files and trailers of the commits to deploy for the approval rules: listing what r1..r2 changes: more than 10000 files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &ranger{r: tc.r, err: tc.err}
			c := &Counter{Env: "prod", Policy: config.Approvals{Required: 1}, Rules: rules, Range: g, Now: now}
			store := st()
			c.Shows(ctx, &store.st, store.st.Pending)
			if diff := cmp.Diff([]string{"r1..r2"}, g.asked); diff != "" {
				t.Errorf("ranges asked (-want +got):\n%s", diff)
			}
			p, err := c.Count(ctx, store, Vote{PlanHash: "sha256:01", Who: github("bob")})
			if tc.refused != "" {
				var re *approval.RefusedError
				if !errors.As(err, &re) || !strings.Contains(re.Reason, tc.refused) {
					t.Fatalf("Count = %v; want refused saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Required != tc.required || !cmp.Equal(p.Reasons, tc.reasons) {
				t.Errorf("required %d, reasons %q; want %d, %q", p.Required, p.Reasons, tc.required, tc.reasons)
			}
		})
	}
	t.Run("no git source", func(t *testing.T) {
		c := &Counter{Env: "prod", Policy: config.Approvals{Required: 1}, Rules: rules, Now: now}
		if _, err := c.Count(ctx, st(), Vote{PlanHash: "sha256:01", Who: github("bob")}); err == nil || !strings.Contains(err.Error(), "no git source") {
			t.Errorf("Count without a git source = %v; want refused", err)
		}
	})
	t.Run("rules that read neither never ask", func(t *testing.T) {
		other, err := policy.NewSet(compiler, []policy.Rule{{Name: "many", When: "size(plan.services) > 20", Required: 2}})
		if err != nil {
			t.Fatal(err)
		}
		g := &ranger{}
		c := &Counter{Env: "prod", Policy: config.Approvals{Required: 1}, Rules: other, Range: g, Now: now}
		if _, err := c.Count(ctx, st(), Vote{PlanHash: "sha256:01", Who: github("bob")}); err != nil {
			t.Fatal(err)
		}
		if len(g.asked) != 0 {
			t.Errorf("asked the git source %v for rules that read neither files nor trailers", g.asked)
		}
	})
}
