package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels of a verification Job and its pod.
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	LabelTask        = "stagehand.io/verification-task"
	LabelEnvironment = "stagehand.io/environment"
	LabelRevision    = "stagehand.io/revision"
)

// jobTTL is how long a finished Job is kept if it could not be deleted.
const jobTTL int32 = 600

// job creates t's Job in its target, waits until it succeeds or fails (or
// the task times out) and deletes it with its pods.
func (v *Verifier) job(ctx context.Context, run Run, t Task) verdict {
	tg, err := targetOf(run, "job.target", t.Job.Target)
	if err != nil {
		return verdict{Fail, err.Error()}
	}
	j, err := jobObject(run, t)
	if err != nil {
		return verdict{Fail, err.Error()}
	}
	jobs := tg.Client.BatchV1().Jobs(tg.Namespace)
	created, err := jobs.Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		return verdict{Fail, fmt.Sprintf("creating Job in %s/%s: %v", tg.Name, tg.Namespace, err)}
	}
	defer func() {
		// Deleted even when the task timed out or the run was cancelled.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		bg := metav1.DeletePropagationBackground
		_ = jobs.Delete(dctx, created.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	}()
	where := fmt.Sprintf("Job %s/%s in target %s", tg.Namespace, created.Name, tg.Name)
	tick := time.NewTicker(v.jobPoll)
	defer tick.Stop()
	for {
		cur, err := jobs.Get(ctx, created.Name, metav1.GetOptions{})
		if err == nil {
			for _, c := range cur.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					continue
				}
				switch c.Type {
				case batchv1.JobComplete:
					return verdict{Pass, where + " succeeded"}
				case batchv1.JobFailed:
					msg := fmt.Sprintf("%s failed: %s", where, strings.TrimSpace(c.Reason+" "+c.Message))
					if why := v.podFailure(ctx, tg, created.Name); why != "" {
						msg += "; " + why
					}
					return verdict{Fail, msg}
				}
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s did not finish: %v", where, context.Cause(ctx))
			if err != nil {
				msg += fmt.Sprintf(" (last read: %v)", err)
			}
			return verdict{Fail, msg}
		case <-tick.C:
		}
	}
}

// podFailure says how the Job's last failed pod ended.
func (v *Verifier) podFailure(ctx context.Context, tg Target, job string) string {
	pods, err := tg.Client.CoreV1().Pods(tg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil && term.ExitCode != 0 {
				msg := fmt.Sprintf("pod %s container %s exited %d", p.Name, cs.Name, term.ExitCode)
				switch {
				case term.Reason != "" && term.Message != "":
					msg += fmt.Sprintf(" (%s: %s)", term.Reason, term.Message)
				case term.Reason+term.Message != "":
					msg += fmt.Sprintf(" (%s)", term.Reason+term.Message)
				}
				return msg
			}
		}
	}
	return ""
}

// targetOf is the target of run named name by key (job.target,
// analysis.target): the first when name is empty.
func targetOf(run Run, key, name string) (Target, error) {
	targets := run.Targets
	if len(targets) == 0 {
		return Target{}, fmt.Errorf("no target to run the Job in")
	}
	if name == "" {
		return targets[0], nil
	}
	for _, t := range targets {
		if t.Name == name {
			return t, nil
		}
	}
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return Target{}, fmt.Errorf("%s %q is not a target of environment %s; targets: %s", key, name, run.Environment, strings.Join(names, ", "))
}

// jobObject builds t's Job for run.
func jobObject(run Run, t Task) (*batchv1.Job, error) {
	versions := run.Versions
	if versions == nil {
		versions = map[string]string{}
	}
	vj, err := json.Marshal(versions)
	if err != nil {
		return nil, fmt.Errorf("encoding versions: %w", err)
	}
	env := []corev1.EnvVar{
		{Name: "STAGEHAND_ENVIRONMENT", Value: run.Environment},
		{Name: "STAGEHAND_REVISION", Value: run.Revision},
		{Name: "STAGEHAND_VERSIONS", Value: string(vj)},
	}
	for _, k := range slices.Sorted(maps.Keys(t.Job.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: t.Job.Env[k]})
	}
	labels := map[string]string{
		LabelManagedBy:   "stagehand",
		LabelTask:        labelValue(t.Name),
		LabelEnvironment: labelValue(run.Environment),
		LabelRevision:    labelValue(run.Revision),
	}
	deadline := int64(t.Timeout / time.Second)
	if deadline <= 0 {
		deadline = int64(DefaultTimeout / time.Second)
	}
	ttl, backoff := jobTTL, t.Job.BackoffLimit
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: jobName(t.Name, run.Revision), Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: t.Job.Annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: t.Job.ServiceAccountName,
					Containers: []corev1.Container{{
						Name: "verify", Image: t.Job.Image, Command: t.Job.Command, Args: t.Job.Args, Env: env,
					}},
				},
			},
		},
	}, nil
}

// jobName is "stagehand-verify-<task>-<revision[:8]>-<random>", at most 63
// characters (a Job's name becomes its pods' label value).
func jobName(task, revision string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	t := labelValue(strings.ToLower(task))
	if len(t) > 30 {
		t = strings.Trim(t[:30], "-_.")
	}
	r := labelValue(revision)
	if len(r) > 8 {
		r = r[:8]
	}
	name := "stagehand-verify-" + t
	if r != "" {
		name += "-" + r
	}
	return strings.ReplaceAll(strings.ReplaceAll(name+"-"+hex.EncodeToString(b), "_", "-"), ".", "-")
}

// labelValue makes s a valid label value: alphanumerics, '-', '_' and '.',
// at most 63, starting and ending alphanumeric.
func labelValue(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			out[i] = '-'
		}
	}
	if len(out) > 63 {
		out = out[:63]
	}
	return strings.Trim(string(out), "-_.")
}
