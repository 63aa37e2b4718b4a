package prbot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

const (
	prodCheckout = "environments/production/checkout-api.json"
	prodPayments = "environments/production/payments-api.json"
	prodRoot     = "environments/production/manifest.json"
)

// production is an environment of three services in three files, with
// formatting the editor must keep.
func production() map[string]string {
	return map[string]string{
		prodRoot: `{
  "includes": ["./checkout-api.json", "./payments-api.json"],
  "services": [ {"name": "search", "containers": [{"dockerTag": "0.1.0"}]} ]
}
`,
		prodCheckout: checkoutJSON,
		prodPayments: `{"services": [
	{"name": "payments-api", "containers": [{"dockerTag": "2.3.0"}]}
]}
`,
	}
}

// rollbackRepo seeds production, then bumps checkout-api and payments-api
// in two commits; it returns the three commits, oldest first.
func rollbackRepo(t *testing.T) (*fixture, []string) {
	t.Helper()
	f := newFixture(t, production())
	seed := f.Srv.Repo(owner, repo).Branch("main")
	checkout := strings.ReplaceAll(checkoutJSON, `"1.5.0"`, `"1.6.0"`)
	c2 := f.Srv.Repo(owner, repo).Commit("main", map[string]string{prodCheckout: checkout}, "bump checkout-api")
	payments := strings.Replace(production()[prodPayments], "2.3.0", "2.4.0", 1)
	c3 := f.Srv.Repo(owner, repo).Commit("main", map[string]string{prodPayments: payments}, "bump payments-api")
	return f, []string{seed, c2, c3}
}

func TestRollbackToPreviousTouchesOnlyWhatDiffers(t *testing.T) {
	ctx := context.Background()
	f, revs := rollbackRepo(t)
	b := f.bot(t)
	checkoutNow := f.File(t, "main", prodCheckout)
	when := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: promote.CheckName("production"), HeadSHA: revs[1], Status: "completed", Conclusion: "success", CompletedAt: when})

	res, err := b.Rollback(ctx, RollbackRequest{Env: "production", Reason: "payments 2.4.0 fails\nat checkout", RequestedBy: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || res.PR != 1 || res.Revision != revs[1] || res.Branch != "stagehand/rollback-production" {
		t.Fatalf("result = %+v, want PR 1 opened going back to %s", res, revs[1])
	}
	if diff := cmp.Diff([]string{prodPayments}, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// Only the one value changed; the untouched file is byte for byte the same.
	if diff := cmp.Diff([]string{
		`-	{"name": "payments-api", "containers": [{"dockerTag": "2.4.0"}]}`,
		`+	{"name": "payments-api", "containers": [{"dockerTag": "2.3.0"}]}`,
	}, changedLines(t, f.File(t, "main", prodPayments), f.File(t, res.Branch, prodPayments))); diff != "" {
		t.Errorf("payments-api.json diff (-want +got):\n%s", diff)
	}
	if got := f.File(t, res.Branch, prodCheckout); got != checkoutNow {
		t.Errorf("checkout-api.json changed:\n%s", got)
	}
	if got := f.File(t, res.Branch, prodRoot); got != production()[prodRoot] {
		t.Errorf("the root manifest changed:\n%s", got)
	}
	pr := f.OpenPulls()[0]
	if want := "Rollback production to " + revs[1][:7] + ": payments 2.4.0 fails at checkout"; pr.Title != want {
		t.Errorf("title = %q, want %q", pr.Title, want)
	}
	for _, want := range []string{
		"| payments-api | payments-api | `2.4.0` | `2.3.0` | 2026-11-20T09:30:00Z | — | [2.3.0...2.4.0](https://github.com/acme/payments-api/compare/2.3.0...2.4.0) |",
		"Requested by: alice",
		"Merging this pull request ends the hold",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}

	// Rolling back again, further, updates the same pull request: one per environment.
	ran := &Ran{When: when.Add(-time.Hour), Approver: "bob", HistoryID: "3"}
	res, err = b.Rollback(ctx, RollbackRequest{Env: "production", Revision: revs[0], Reason: "both", Ran: ran})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionUpdated || res.PR != 1 || len(f.OpenPulls()) != 1 {
		t.Fatalf("second rollback = %+v, want PR 1 updated", res)
	}
	if diff := cmp.Diff([]string{prodCheckout, prodPayments}, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if got := f.File(t, res.Branch, prodCheckout); got != checkoutJSON {
		t.Errorf("checkout-api.json is not what it was at %s:\n%s", revs[0], got)
	}
	pr = f.OpenPulls()[0]
	for _, want := range []string{"(history entry 3)", "| checkout-api | checkout-worker | `1.6.0` | `1.5.0` | 2026-11-20T08:30:00Z | bob |"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	// The same again changes nothing.
	if res, err = b.Rollback(ctx, RollbackRequest{Env: "production", Revision: revs[0], Reason: "both", Ran: ran}); err != nil || res.Action != ActionUnchanged {
		t.Errorf("repeated rollback = %+v, %v; want unchanged", res, err)
	}
}

func TestRollbackRefusals(t *testing.T) {
	ctx := context.Background()
	f, revs := rollbackRepo(t)
	b := f.bot(t)
	tests := []struct {
		name    string
		req     RollbackRequest
		want    string
		unknown bool
	}{
		{"unknown revision", RollbackRequest{Env: "production", Revision: strings.Repeat("ab", 20), Reason: "x"},
			"revision " + strings.Repeat("ab", 20) + " is not in acme/manifests", true},
		{"not a revision", RollbackRequest{Env: "production", Revision: "main~1", Reason: "x"}, `revision "main~1": want a commit SHA`, true},
		{"no reason", RollbackRequest{Env: "production", Revision: revs[0]}, "a reason is required", false},
		{"bad environment", RollbackRequest{Env: "../x", Reason: "x"}, `environment "../x"`, false},
		{"unknown environment", RollbackRequest{Env: "prod", Reason: "x"}, "rolling back prod: resolving it at", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Rollback(ctx, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if got := errors.Is(err, ErrUnknownRevision); got != tt.unknown {
				t.Errorf("errors.Is(err, ErrUnknownRevision) = %v, want %v", got, tt.unknown)
			}
		})
	}
	// Nothing differs from the head: nothing is opened.
	res, err := b.Rollback(ctx, RollbackRequest{Env: "production", Revision: revs[2], Reason: "x"})
	if err != nil || res.Action != ActionNone || res.PR != 0 {
		t.Errorf("rollback to the head = %+v, %v; want none", res, err)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Errorf("%d pull requests opened by refusals", n)
	}
}
