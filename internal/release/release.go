package release

import (
	"encoding/json"
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The release approval: an approval task after the deployment in a stage's
// sequence (Keptn's [deployment, test, approval, release]). The plan is
// applied and verified, and then the run waits for a person before the
// rest of it: the release. The wait is kept in the state, so it survives a
// restart and every replica decides it:
//
//   - the run, with the approval task started, and the apply still in flight
//     (st.InFlight: it is recorded in the history once the run ends);
//   - a pending record with Release set, on the applied plan's planHash,
//     written in the same state write as the task's start: the Decider's
//     Approve and Reject, the API, the CLI, the web page and the check
//     run's buttons act on it as on a plan awaiting approval, under the
//     same policy (approvals.required, forbidAuthors, teams, minPermission).
//
// Approving finishes the task with pass and runs the rest; rejecting
// finishes it with fail, which fails the run and the deploy: recorded as
// failed, the check run failure, and with onFailedRollout: rollback the
// workloads are put back as after a failed verification. A newer revision
// supersedes the wait: the apply is recorded (deployed, never released),
// the run aborted, and the new revision planned. A decision taken before
// the wait began (a second approval of the plan before its deployment,
// queued while it was applied) is refused as stale.

// inFlightProposal is the proposal of the apply in flight in env's state st at s: the
// pending release's plan when there is one, else the in-flight record's
// planHash and changes.
func inFlightProposal(env string, s gitsource.Snapshot, st *state.EnvState) (approval.Proposal, error) {
	f := st.InFlight
	prop := approval.Proposal{Environment: env, Revision: f.Revision, RevisionTime: s.Time}
	if p := st.Pending; p != nil && p.Release && p.PlanHash == f.PlanHash {
		plan, err := pass.DecodePlan(env, p)
		prop.Plan = plan
		return prop, err
	}
	var changes []reconcile.Change
	err := json.Unmarshal(f.Changes, &changes)
	if err != nil {
		err = fmt.Errorf("decoding the changes of the apply in flight: %w", err)
	}
	prop.Plan = &reconcile.Plan{Environment: env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	return prop, err
}
