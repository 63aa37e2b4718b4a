package daemon

import (
	"encoding/json"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The daemon runs each environment's delivery sequence (pipeline.yaml's
// stages[].sequence) for every plan it deploys through its worker's
// delivery.Run (internal/delivery): approval → deployment (apply and
// rollout) → test/evaluation (the Runners given with WithTasks) → release.
// The gate hears Completed once the whole sequence has run: the
// stagehand/<env> check run is the sequence's result, which is what
// prbot's requires.healthy reads.

// ContinueRun makes p's job the run the previous leader left in flight
// after its deployment (or a release approval decided), on an environment
// in sync at p's snapshot: the steps from verify on run what is left of its
// tasks and record, report and, when a task failed and the environment says
// so, roll it back exactly as after an apply. It reports whether there was
// one. The run may be of a revision older than the snapshot: the snapshot
// then changes nothing here (the environment is in sync at it), and the run
// is still the deployed one's.
func (w *worker) ContinueRun(p *pass.Pass) bool {
	st := p.St
	f, r := st.InFlight, st.Sequence
	if st.Phase != status.PhaseVerifying || f == nil || r == nil || r.Done() || f.Revision != r.Revision {
		return false
	}
	i := r.Index(promote.TaskDeployment)
	if i < 0 || r.Tasks[i].Status != sequence.StatusFinished || r.Tasks[i].Result != promote.ResultPass {
		return false
	}
	var changes []reconcile.Change
	if err := json.Unmarshal(f.Changes, &changes); err != nil {
		w.log.Error(err, "decoding the changes of the apply in flight", "environment", w.env)
	}
	w.seq.Adopt(r, p.EnvM)
	plan := &reconcile.Plan{Environment: w.env, Revision: f.Revision, PlanHash: f.PlanHash, Changes: changes}
	prop := approval.Proposal{Environment: w.env, Revision: f.Revision, RevisionTime: p.Snap.Time, Plan: plan}
	w.log.Info("continuing the sequence after the deployment", "environment", w.env, "revision", approval.ShortRevision(f.Revision), "task", r.Tasks[r.Next()%len(r.Tasks)].Name)
	p.Job = &pass.Job{Prop: prop, Continued: true,
		Out: approval.Outcome{Result: approval.ResultSucceeded, Approver: f.Approver, Approvers: f.Approvers, Started: f.Started}}
	return true
}
