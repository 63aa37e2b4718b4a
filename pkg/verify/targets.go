package verify

import "fmt"

// CheckTargets reports whether t can run in env's targets, before any run:
// the target a job or analysis task names (job.target, analysis.target; the
// first when it names none) must be one of them, and an analysis task's must
// reach Argo Rollouts' resources (Target.Dynamic, which a target has when
// its environment sets rollouts). Its error names the key; the same task
// would otherwise fail each time it runs, after the deploy.
func CheckTargets(t Task, env string, targets []Target) error {
	run := Run{Environment: env, Targets: targets}
	switch {
	case t.Job != nil:
		_, err := targetOf(run, "job.target", t.Job.Target)
		return err
	case t.Analysis != nil:
		tg, err := targetOf(run, "analysis.target", t.Analysis.Target)
		if err != nil {
			return err
		}
		if tg.Dynamic == nil {
			return fmt.Errorf("analysis: target %s of environment %s reads no Argo Rollouts resources: an analysis task needs environments.%s.rollouts set in the reconciler's configuration", tg.Name, env, env)
		}
	}
	return nil
}
