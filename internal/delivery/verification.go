package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// Verification makes the test and evaluation tasks of every environment's
// sequence whose properties declare a verification (job, http or
// prometheus; see pkg/verify) run by a Verifier in the environment's
// targets, unless a Runner of their own was given for the task kind.
type Verification struct {
	// Verifier runs the verifications (nil: none; only Own runs tasks).
	Verifier *verify.Verifier
	// Own are the Runners given for task kinds (the daemon's WithTask).
	Own map[string]sequence.Runner
	// Observe (may be nil) hears each verification's result (the metrics).
	Observe func(env string, task verify.Task, tr verify.TaskResult)
}

// Runners are the Runners of env's test and evaluation tasks: Own, and the
// Verifier's in targets for the kinds Own does not run.
func (v Verification) Runners(env string, targets []reconcile.Target) map[string]sequence.Runner {
	if v.Verifier == nil {
		return v.Own
	}
	tasks := maps.Clone(v.Own)
	if tasks == nil {
		tasks = map[string]sequence.Runner{}
	}
	run := v.runner(env, targets)
	for _, name := range []string{promote.TaskTest, promote.TaskEvaluation} {
		if _, ok := tasks[name]; !ok {
			tasks[name] = run
		}
	}
	return tasks
}

// Checker checks a test or evaluation task of env that the Verifier runs
// (nothing when there is no Verifier, or Own runs it) as the sequence is
// read, before a plan is proposed: its properties parse, and it can run in
// env's targets (verify.CheckTargets: the target it names is one of them,
// and an analysis task's reads Argo Rollouts' resources, which it does only
// where environments.<env>.rollouts is set).
func (v Verification) Checker(env string, targets []reconcile.Target) func(promote.Task) error {
	vt := verifyTargets(targets)
	return func(t promote.Task) error {
		if v.Verifier == nil {
			return nil
		}
		if _, own := v.Own[t.Name]; own {
			return nil // run by the Runner given for it
		}
		task, err := verify.ParseTask(t.Name, t.Properties)
		if err != nil {
			return err
		}
		return verify.CheckTargets(task, env, vt)
	}
}

// verifyTargets are targets as pkg/verify takes them.
func verifyTargets(targets []reconcile.Target) []verify.Target {
	vt := make([]verify.Target, len(targets))
	for i, t := range targets {
		vt[i] = verify.Target{Name: t.Name, Namespace: t.Namespace, Client: t.Client, Dynamic: t.Dynamic}
	}
	return vt
}

// runner runs one verification task of env in targets and tells Observe.
func (v Verification) runner(env string, targets []reconcile.Target) sequence.Runner {
	vt := verifyTargets(targets)
	return func(ctx context.Context, r sequence.Request) (sequence.Result, error) {
		task, err := verify.ParseTask(r.Task.Name, r.Task.Properties)
		if err != nil {
			return sequence.Result{Result: promote.ResultFail, Message: fmt.Sprintf("sequence[%d]: %v", r.Task.Index, err)}, nil
		}
		rep, err := v.Verifier.Verify(ctx, verify.Run{Environment: env, Revision: r.Revision, Versions: r.Versions, Targets: vt}, []verify.Task{task}, nil)
		if err != nil {
			return sequence.Result{}, err // ctx ended: the next leader runs the task again
		}
		tr := rep.Tasks[0]
		if v.Observe != nil {
			v.Observe(env, task, tr)
		}
		out, err := json.Marshal(VerifyOutputs{Verification: tr})
		if err != nil {
			return sequence.Result{}, fmt.Errorf("encoding the verification result: %w", err)
		}
		return sequence.Result{Result: tr.Result, Message: fmt.Sprintf("%s check: %s", task.Kind, tr.Message), Outputs: out}, nil
	}
}
