package gate

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/pass"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// A pending plan outlives a newer revision that changes nothing in its
// environment (a commit for another environment, a README): when the newer
// revision descends from the plan's, resolves the environment to the same
// manifest (root, skipConfirmation, services and their versions, each from
// the same file), runs the same sequence, and plans the same changes (the
// new plan's changes hashed at the plan's revision give its planHash), the
// plan stays pending as it is: bound to the revision whose content was
// reviewed, with the approvals counted so far, on the same check run, and no
// gate or sink hears it superseded. Approving it applies the plan's
// revision (pkg/reconcile's Apply plans it again there and refuses a
// change, as for any plan). A newer revision that changes anything of that
// supersedes it as before.

// keptPlan is plan (planned at the newer revision) as the pending plan p: at p's revision and planHash, with
// the reviewed plan's history-rewritten flag.
func keptPlan(plan *reconcile.Plan, p *approval.Pending, reviewed *reconcile.Plan) *reconcile.Plan {
	kept := *plan
	kept.Revision, kept.PlanHash, kept.HistoryRewritten = p.Revision, p.PlanHash, reviewed.HistoryRewritten
	return &kept
}

// keptKey names pending plan p kept at newer revision rev.
func keptKey(rev string, p *approval.Pending) string {
	return rev + " " + p.Revision + " " + p.PlanHash + " " + p.ProposedAt.String()
}

// sameManifest reports whether a and b resolve an environment alike: the
// same root, skipConfirmation and services (names, versions, containers,
// and the file each came from). Where in those files they stand, and the
// other files of the repository, do not matter.
func sameManifest(a, b *manifest.Environment) bool {
	type content struct {
		Name             string
		Root             string
		SkipConfirmation bool
		Services         []manifest.Service
	}
	return sameJSON(content{a.Name, a.Root, a.SkipConfirmation, a.Services}, content{b.Name, b.Root, b.SkipConfirmation, b.Services})
}

// sameJSON reports whether a and b encode alike; a value that cannot be
// encoded is not the same as anything.
func sameJSON(a, b any) bool {
	x, err := json.Marshal(a)
	if err != nil {
		return false
	}
	y, err := json.Marshal(b)
	return err == nil && bytes.Equal(x, y)
}

// keepPending returns the snapshot, manifest and plan of st's pending plan
// p at its own revision when s (resolved as envM, planned as plan) is a
// newer revision that changes nothing in the environment (see above);
// ok is false otherwise, and whenever something cannot be read: the plan
// is then superseded, as a plan for an older revision always was.
func (k *Keeper) keepPending(ctx context.Context, pa *pass.Pass) (gitsource.Snapshot, *manifest.Environment, *reconcile.Plan, bool) {
	s, envM, plan, st := pa.Snap, pa.EnvM, pa.Plan, pa.St
	p := st.Pending
	if p == nil || st.Phase == status.PhaseAwaitingRelease || p.Revision == s.Revision || plan.Empty() || k.Source == nil ||
		reconcile.Hash(k.Env, p.Revision, plan.Changes) != p.PlanHash {
		return gitsource.Snapshot{}, nil, nil, false
	}
	log := k.Log.WithValues("environment", k.Env, "revision", approval.ShortRevision(s.Revision), "pending", approval.ShortRevision(p.Revision), "planHash", p.PlanHash)
	ps, err := k.Source.At(p.Revision)
	if err != nil {
		log.Error(err, "reading the pending plan's revision to compare it with the newer one; superseding the plan")
		return gitsource.Snapshot{}, nil, nil, false
	}
	reviewed, err := pass.DecodePlan(k.Env, p)
	if err != nil {
		return gitsource.Snapshot{}, nil, nil, false
	}
	key := keptKey(s.Revision, p)
	if k.kept == key && k.keptEnv != nil {
		// Compared at an earlier pass: the two revisions' content is the same as then (only the plan,
		// checked above against the planHash, depends on the cluster).
		return ps, k.keptEnv, keptPlan(plan, p, reviewed), true
	}
	if ok, err := k.Source.Descends(ctx, s.Revision, p.Revision); err != nil || !ok {
		if err != nil {
			log.Error(err, "checking that the newer revision descends from the pending plan's; superseding the plan")
		}
		return gitsource.Snapshot{}, nil, nil, false
	}
	pEnv, err := k.Manifests.Resolve(ctx, ps, st)
	if err != nil {
		log.Error(err, "resolving the pending plan's revision to compare it with the newer one; superseding the plan")
		return gitsource.Snapshot{}, nil, nil, false
	}
	if !sameManifest(pEnv, envM) {
		return gitsource.Snapshot{}, nil, nil, false
	}
	pTasks, err := k.Seq.Tasks(ps)
	if err != nil {
		return gitsource.Snapshot{}, nil, nil, false
	}
	sTasks, err := k.Seq.Tasks(s)
	if err != nil || !sameJSON(pTasks, sTasks) {
		return gitsource.Snapshot{}, nil, nil, false
	}
	log.Info("a newer revision changes nothing here: the pending plan stays pending, at its revision")
	k.kept, k.keptEnv = key, pEnv
	return ps, pEnv, keptPlan(plan, p, reviewed), true
}
