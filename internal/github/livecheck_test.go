package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/github"
)

// TestClickIsCheckedAgainstTheLiveRun: a click is decided on only when the
// check run as GitHub holds it now is our awaiting approval run for the same
// commit; whatever the (signed) payload claims, a click on a run already
// decided — a replay after a restart forgot the delivery — a forged commit or
// check name decides nothing, and a click without requested_action is an
// error, not a panic.
func TestClickIsCheckedAgainstTheLiveRun(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(ev map[string]any) // changes the delivery's payload
		decided bool                    // completes the run before the click arrives
		wantErr error
		want    int  // approvals
		ignored bool // the click is reported as ignored, with why
	}{
		{name: "a genuine click", want: 1},
		{name: "a click replayed after the run was decided", decided: true, ignored: true},
		{name: "the payload names another commit", edit: func(ev map[string]any) {
			ev["check_run"].(map[string]any)["head_sha"] = "0123456789012345678901234567890123456789"
		}, ignored: true},
		{name: "the payload names another environment's check", edit: func(ev map[string]any) {
			ev["check_run"].(map[string]any)["name"] = "stagehand/staging"
		}, ignored: true},
		{name: "no requested_action", edit: func(ev map[string]any) { delete(ev, "requested_action") }, wantErr: github.ErrNoRequestedAction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			f.srv.Repo(owner, repo).SetPermission("maria", "maintain")
			sha := f.srv.Repo(owner, repo).Commit("main", map[string]string{"a": "1"}, "one")
			p := plan("prod", sha, 1)
			id, err := f.client.Checks().Propose(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			d := newDecider()
			d.gate = github.NewGate(f.client)
			d.setPlan(p)
			d.set("staging", p.PlanHash)
			var reported []string
			h := newHandler(t, f.client, d, nil, github.OnDecisionError(func(err error) { reported = append(reported, err.Error()) }))
			var ev map[string]any
			if err := json.Unmarshal(f.srv.Webhooks(owner, repo).CheckRunAction(id, "approve", "maria").Body, &ev); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(ev)
			}
			if tc.decided {
				if err := f.client.Checks().Stale(ctx, id, "decided already"); err != nil {
					t.Fatal(err)
				}
			}
			body, _ := json.Marshal(ev)
			err = h.HandleCheckRun(ctx, body)
			h.Wait()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("HandleCheckRun error = %v, want %v", err, tc.wantErr)
			}
			if len(d.approved) != tc.want || len(d.rejected) != 0 {
				t.Errorf("approved %v, rejected %v; want %d approvals", d.approved, d.rejected, tc.want)
			}
			ignored := len(reported) == 1 && strings.Contains(reported[0], fmt.Sprintf("ignoring a click on check run %d by maria: ", id))
			if ignored != tc.ignored {
				t.Errorf("reported %q; want the click reported as ignored: %v", reported, tc.ignored)
			}
		})
	}
}
