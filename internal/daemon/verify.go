package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/stagehand-gitops/stagehand/internal/delivery"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// WithVerifier makes v run the test and evaluation tasks of every
// environment's sequence (pipeline.yaml) whose properties declare a
// verification (job, http or prometheus; see pkg/verify), in the
// environment's targets. Their properties are checked when the environment
// is planned, before anything is applied.
func WithVerifier(v *verify.Verifier) Option {
	return func(o *options) error {
		if v == nil {
			return errors.New("configuring daemon: nil verifier")
		}
		o.verifier = v
		return nil
	}
}

// envTasks are the Runners of env's test and evaluation tasks: those given
// with WithTask, and the verifier's in env's targets.
func (d *Daemon) envTasks(env string) map[string]sequence.Runner {
	if d.o.verifier == nil {
		return d.o.tasks
	}
	tasks := maps.Clone(d.o.tasks)
	if tasks == nil {
		tasks = map[string]sequence.Runner{}
	}
	run := verifyRunner(d.o.verifier, env, d.targets[env], d.metrics)
	for _, name := range []string{promote.TaskTest, promote.TaskEvaluation} {
		if _, ok := tasks[name]; !ok {
			tasks[name] = run
		}
	}
	return tasks
}

// checkTask checks the properties of a test or evaluation task the
// verifier runs (nil when there is no verifier).
func (d *Daemon) checkTask(t promote.Task) error {
	if d.o.verifier == nil {
		return nil
	}
	if _, own := d.o.tasks[t.Name]; own {
		return nil // run by the Runner given with WithTask
	}
	_, err := verify.ParseTask(t.Name, t.Properties)
	return err
}

// verifyRunner runs one verification task of env in targets and counts it.
func verifyRunner(v *verify.Verifier, env string, targets []reconcile.Target, m *Metrics) sequence.Runner {
	vt := make([]verify.Target, len(targets))
	for i, t := range targets {
		vt[i] = verify.Target{Name: t.Name, Namespace: t.Namespace, Client: t.Client}
	}
	return func(ctx context.Context, r sequence.Request) (sequence.Result, error) {
		task, err := verify.ParseTask(r.Task.Name, r.Task.Properties)
		if err != nil {
			return sequence.Result{Result: promote.ResultFail, Message: fmt.Sprintf("sequence[%d]: %v", r.Task.Index, err)}, nil
		}
		rep, err := v.Verify(ctx, verify.Run{Environment: env, Revision: r.Revision, Versions: r.Versions, Targets: vt}, []verify.Task{task}, nil)
		if err != nil {
			return sequence.Result{}, err // ctx ended: the next leader runs the task again
		}
		tr := rep.Tasks[0]
		m.observeVerification(env, task, tr)
		out, err := json.Marshal(delivery.VerifyOutputs{Verification: tr})
		if err != nil {
			return sequence.Result{}, fmt.Errorf("encoding the verification result: %w", err)
		}
		return sequence.Result{Result: tr.Result, Message: fmt.Sprintf("%s check: %s", task.Kind, tr.Message), Outputs: out}, nil
	}
}
