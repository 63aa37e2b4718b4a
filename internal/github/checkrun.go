package github

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// checkRunAPI is the check-runs endpoints of the manifests repository: list a commit's runs by name, read,
// find, create and update one.
type checkRunAPI struct {
	rest        *gh.Client
	owner, repo string
	details     string // github.detailsURL
	now         func() time.Time
}

// PlanRef names the check run of one plan: its environment, the commit it was planned at and its planHash
// ("" for any plan, where a method says so).
type PlanRef struct{ Environment, Revision, PlanHash string }

func refOf(p *reconcile.Plan) PlanRef {
	return PlanRef{Environment: p.Environment, Revision: p.Revision, PlanHash: p.PlanHash}
}

// create creates a check run as opts say and returns it.
func (c checkRunAPI) create(ctx context.Context, opts gh.CreateCheckRunOptions) (*gh.CheckRun, error) {
	r, _, err := c.rest.Checks.CreateCheckRun(ctx, c.owner, c.repo, opts)
	if err != nil {
		return nil, fmt.Errorf("creating check run %s on %s: %w", opts.Name, short(opts.HeadSHA), err)
	}
	return r, nil
}

func (c checkRunAPI) update(ctx context.Context, id int64, u runUpdate) error {
	if u.Actions == nil {
		u.Actions = []*gh.CheckRunAction{}
	}
	if u.Conclusion != "" && u.CompletedAt == nil {
		u.CompletedAt = &gh.Timestamp{Time: c.now().UTC().Truncate(time.Second)}
	}
	req, err := c.rest.NewRequest(http.MethodPatch, fmt.Sprintf("repos/%s/%s/check-runs/%d", c.owner, c.repo, id), u)
	if err != nil {
		return fmt.Errorf("building check run update: %w", err)
	}
	if _, err := c.rest.Do(ctx, req, nil); err != nil {
		return fmt.Errorf("updating check run %d on %s: %w", id, c.owner+"/"+c.repo, err)
	}
	return nil
}

// detailsURL is the reconciler API page of env, linked from its check runs ("" when github.detailsURL is unset).
func (c checkRunAPI) detailsURL(env string) string {
	if c.details == "" {
		return ""
	}
	return strings.TrimRight(c.details, "/") + "/api/v1/environments/" + env
}

// list lists the check runs called name on sha, newest first.
func (c checkRunAPI) list(ctx context.Context, sha, name string) ([]*gh.CheckRun, error) {
	var out []*gh.CheckRun
	opts := &gh.ListCheckRunsOptions{CheckName: gh.String(name), Filter: gh.String("all"), ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.rest.Checks.ListCheckRunsForRef(ctx, c.owner, c.repo, sha, opts)
		if err != nil {
			return nil, fmt.Errorf("listing check runs %q on %s: %w", name, short(sha), err)
		}
		out = append(out, res.CheckRuns...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// get reads check run id as GitHub holds it now.
func (c checkRunAPI) get(ctx context.Context, id int64) (*gh.CheckRun, error) {
	r, _, err := c.rest.Checks.GetCheckRun(ctx, c.owner, c.repo, id)
	if err != nil {
		return nil, fmt.Errorf("getting check run %d: %w", id, err)
	}
	return r, nil
}

// find finds the check run of ref (newest first), or nil: the plan's, awaiting
// the plan's decision or its release's.
func (c checkRunAPI) find(ctx context.Context, ref PlanRef) (*gh.CheckRun, error) {
	runs, err := c.list(ctx, ref.Revision, approval.CheckName(ref.Environment))
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if ofPlan(r.GetExternalID(), ref.PlanHash) {
			return r, nil
		}
	}
	return nil, nil
}
