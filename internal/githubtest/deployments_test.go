package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

func TestDeploymentLifecycle(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	first := srv.Repo("acme", "manifests").Commit("main", map[string]string{"a.json": "{}"}, "first")
	second := srv.Repo("acme", "manifests").Commit("main", map[string]string{"a.json": "[]"}, "second")
	gh := newClient(t, srv)
	deploy := func(sha, env string) *github.Deployment {
		t.Helper()
		d, _, err := gh.Repositories.CreateDeployment(ctx, "acme", "manifests", &github.DeploymentRequest{
			Ref: github.String(sha), Environment: github.String(env), AutoMerge: github.Bool(false), RequiredContexts: &[]string{},
			Payload: map[string]any{"planHash": "sha256:" + sha[:7]}, Description: github.String("deploy " + sha[:7]),
		})
		if err != nil {
			t.Fatalf("CreateDeployment %s: %v", sha[:7], err)
		}
		return d
	}
	status := func(d *github.Deployment, state string) {
		t.Helper()
		if _, _, err := gh.Repositories.CreateDeploymentStatus(ctx, "acme", "manifests", d.GetID(), &github.DeploymentStatusRequest{
			State: github.String(state), LogURL: github.String("https://log.example/" + state), AutoInactive: github.Bool(true),
		}); err != nil {
			t.Fatalf("CreateDeploymentStatus %s: %v", state, err)
		}
	}
	d1 := deploy(first, "prod")
	if d1.GetSHA() != first || d1.GetEnvironment() != "prod" || !strings.Contains(string(d1.Payload), "sha256:") {
		t.Errorf("created = %+v payload %s", d1, d1.Payload)
	}
	status(d1, "in_progress")
	status(d1, "success")
	other := deploy(first, "staging")
	status(other, "success")
	d2 := deploy(second, "prod")
	status(d2, "success")

	want := map[int64][]string{
		d1.GetID():    {"in_progress", "success", "inactive"}, // made inactive by d2's success
		other.GetID(): {"success"},                            // another environment: untouched
		d2.GetID():    {"success"},
	}
	for id, states := range want {
		list, _, err := gh.Repositories.ListDeploymentStatuses(ctx, "acme", "manifests", id, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := len(list) - 1; i >= 0; i-- { // GitHub lists newest first
			got = append(got, list[i].GetState())
		}
		if diff := cmp.Diff(states, got); diff != "" {
			t.Errorf("deployment %d statuses (-want +got):\n%s", id, diff)
		}
	}
	prod, _, err := gh.Repositories.ListDeployments(ctx, "acme", "manifests", &github.DeploymentsListOptions{Environment: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if len(prod) != 2 || prod[0].GetID() != d2.GetID() || prod[1].GetID() != d1.GetID() {
		t.Errorf("prod deployments: %d, want d2 then d1", len(prod))
	}
}

func TestDeploymentRefusals(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	old := srv.Repo("acme", "manifests").Commit("main", map[string]string{"a.json": "{}"}, "old")
	srv.Repo("acme", "manifests").Commit("main", map[string]string{"a.json": "[]"}, "head")
	gh := newClient(t, srv)
	if _, _, err := gh.Repositories.CreateStatus(ctx, "acme", "manifests", old, &github.RepoStatus{State: github.String("failure"), Context: github.String("ci/build")}); err != nil {
		t.Fatal(err)
	}
	code := func(err error) int {
		var e *github.ErrorResponse
		if errors.As(err, &e) {
			return e.Response.StatusCode
		}
		return 0
	}
	// auto_merge defaults to true: a commit behind the default branch cannot be merged into.
	_, _, err := gh.Repositories.CreateDeployment(ctx, "acme", "manifests", &github.DeploymentRequest{Ref: github.String(old), RequiredContexts: &[]string{}})
	if code(err) != http.StatusConflict {
		t.Errorf("auto_merge on an old commit: %v, want 409", err)
	}
	// required_contexts defaults to every context: the failed ci/build status refuses.
	_, _, err = gh.Repositories.CreateDeployment(ctx, "acme", "manifests", &github.DeploymentRequest{Ref: github.String(old), AutoMerge: github.Bool(false)})
	if code(err) != http.StatusConflict {
		t.Errorf("failed status with default required contexts: %v, want 409", err)
	}
	d, _, err := gh.Repositories.CreateDeployment(ctx, "acme", "manifests", &github.DeploymentRequest{Ref: github.String(old),
		AutoMerge: github.Bool(false), RequiredContexts: &[]string{}})
	if err != nil {
		t.Fatalf("with auto_merge false and no required contexts: %v", err)
	}
	if d.GetEnvironment() != "production" || d.GetTask() != "deploy" {
		t.Errorf("defaults: environment %q task %q", d.GetEnvironment(), d.GetTask())
	}
	_, _, err = gh.Repositories.CreateDeploymentStatus(ctx, "acme", "manifests", d.GetID(), &github.DeploymentStatusRequest{
		State: github.String("failure"), Description: github.String(strings.Repeat("x", 141))})
	if code(err) != http.StatusUnprocessableEntity {
		t.Errorf("141-character description: %v, want 422", err)
	}
	_, _, err = gh.Repositories.CreateDeploymentStatus(ctx, "acme", "manifests", d.GetID()+1000, &github.DeploymentStatusRequest{State: github.String("success")})
	if code(err) != http.StatusNotFound {
		t.Errorf("unknown deployment: %v, want 404", err)
	}
}
