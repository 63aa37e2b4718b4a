package dora_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// replica is one reconciler process's DORA metrics.
type replica struct {
	reg *prometheus.Registry
	c   *dora.Counter
}

func newReplica(t *testing.T, marks *dora.Marks, started time.Time) replica {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := dora.NewCounter(reg, marks, dora.WithCommits(scriptedCommits()), dora.WithClock(func() time.Time { return started }))
	if err != nil {
		t.Fatal(err)
	}
	return replica{reg: reg, c: c}
}

// counted is what one replica's metrics say of an environment.
type counted struct {
	Succeeded, Failed, RolledBack, ChangeFailures float64
	LeadTimes, Restores                           uint64
	RestoreSeconds                                float64
}

func (r replica) counted(t *testing.T, env string) counted {
	t.Helper()
	var out counted
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["environment"] != env {
				continue
			}
			switch mf.GetName() {
			case "stagehand_deployments_total":
				switch labels["result"] {
				case dora.Succeeded:
					out.Succeeded = m.GetCounter().GetValue()
				case dora.Failed:
					out.Failed = m.GetCounter().GetValue()
				case dora.RolledBack:
					out.RolledBack = m.GetCounter().GetValue()
				}
			case "stagehand_change_failures_total":
				out.ChangeFailures = m.GetCounter().GetValue()
			case "stagehand_lead_time_seconds":
				out.LeadTimes = m.GetHistogram().GetSampleCount()
			case "stagehand_time_to_restore_seconds":
				out.Restores = m.GetHistogram().GetSampleCount()
				out.RestoreSeconds = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func add(a, b counted) counted {
	return counted{Succeeded: a.Succeeded + b.Succeeded, Failed: a.Failed + b.Failed, RolledBack: a.RolledBack + b.RolledBack,
		ChangeFailures: a.ChangeFailures + b.ChangeFailures, LeadTimes: a.LeadTimes + b.LeadTimes, Restores: a.Restores + b.Restores,
		RestoreSeconds: a.RestoreSeconds + b.RestoreSeconds}
}

func holding(context.Context) error { return nil }

func lost(context.Context) error { return errors.New("term over") }

// TestCounterCountsEachDeployOnce: on the real API server, each deploy of the
// scripted history is counted once across a handover to another replica, the
// old holder told late, a restart, a replica whose term is over, and two
// replicas told at once; the sums over every replica are the history's.
func TestCounterCountsEachDeployOnce(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	client := kubernetes.NewForConfigOrDie(env.Config)
	marks := dora.NewMarks(client, ns)
	ctx := context.Background()
	count := func(t *testing.T, r replica, history []approval.Entry, holds func(context.Context) error) {
		t.Helper()
		if err := r.c.Count(ctx, "prod", history, holds); err != nil {
			t.Fatal(err)
		}
	}

	a := newReplica(t, marks, at(-1, 0))
	count(t, a, upTo(4), holding)
	// 1, 3, 4: 3 failed and restored by 4 in 3h; 1 and 4 have lead times.
	first := counted{Succeeded: 2, Failed: 1, ChangeFailures: 1, LeadTimes: 2, Restores: 1, RestoreSeconds: 3 * 3600}
	if diff := cmp.Diff(first, a.counted(t, "prod")); diff != "" {
		t.Fatalf("after entry 4 (-want +got):\n%s", diff)
	}
	count(t, a, upTo(4), holding)
	if diff := cmp.Diff(first, a.counted(t, "prod")); diff != "" {
		t.Fatalf("told again (-want +got):\n%s", diff)
	}

	// A handover: b works prod from entry 5 on; a, told late, counts nothing.
	b := newReplica(t, marks, at(4, 0))
	count(t, b, upTo(6), holding)
	count(t, a, upTo(6), holding)
	// 5 succeeded, and became a change failure when 6 rolled it back; 6 restored in 2h10m.
	second := counted{Succeeded: 2, ChangeFailures: 1, LeadTimes: 1, Restores: 1, RestoreSeconds: 2*3600 + 600}
	if diff := cmp.Diff(second, b.counted(t, "prod")); diff != "" {
		t.Errorf("b after entry 6 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(first, a.counted(t, "prod")); diff != "" {
		t.Errorf("a told after the handover (-want +got):\n%s", diff)
	}

	// A replica whose term is over counts nothing and moves no mark.
	c := newReplica(t, marks, at(30, 0))
	count(t, c, upTo(9), lost)
	if diff := cmp.Diff(counted{}, c.counted(t, "prod")); diff != "" {
		t.Errorf("a replica no longer holding (-want +got):\n%s", diff)
	}

	// b restarts as d and e, both told at once of the rest of the history.
	d, e := newReplica(t, marks, at(30, 0)), newReplica(t, marks, at(30, 0))
	var wg sync.WaitGroup
	for _, r := range []replica{d, e} {
		wg.Go(func() {
			if err := r.c.Count(ctx, "prod", scripted(), holding); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	total := add(add(add(a.counted(t, "prod"), b.counted(t, "prod")), d.counted(t, "prod")), e.counted(t, "prod"))
	// The whole history: 9 succeeded, 2 failed, 1 rolled back, 4 change
	// failures, lead times for 1, 4, 5, 7, 12, 13 (r7's cannot be dated),
	// restores of 3h, 2h10m and 1 day.
	want := counted{Succeeded: 9, Failed: 2, RolledBack: 1, ChangeFailures: 4, LeadTimes: 6, Restores: 3,
		RestoreSeconds: 3*3600 + 2*3600 + 600 + 24*3600}
	if diff := cmp.Diff(want, total); diff != "" {
		t.Errorf("sums over every replica (-want +got):\n%s", diff)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, dora.MarksConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["prod"]; got != "14" {
		t.Errorf("prod's mark = %q, want 14", got)
	}
}

// TestCounterFirstSight: an environment without a mark (a reconciler
// upgraded to one that counts) begins after the entries that ended before
// the counter started; an environment whose history was empty counts its
// first deploy.
func TestCounterFirstSight(t *testing.T) {
	env := cluster.Env(t)
	ns := env.Namespace(t)
	marks := dora.NewMarks(kubernetes.NewForConfigOrDie(env.Config), ns)
	ctx := context.Background()

	r := newReplica(t, marks, at(9, 0))
	if err := r.c.Count(ctx, "prod", upTo(12), holding); err != nil {
		t.Fatal(err)
	}
	// 10, 11 and 12 ended after the start: counted, 12 restoring from 10.
	want := counted{Succeeded: 1, Failed: 1, RolledBack: 1, ChangeFailures: 2, LeadTimes: 1, Restores: 1, RestoreSeconds: 24 * 3600}
	if diff := cmp.Diff(want, r.counted(t, "prod")); diff != "" {
		t.Errorf("upgraded (-want +got):\n%s", diff)
	}

	if err := r.c.Count(ctx, "staging", nil, holding); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Count(ctx, "staging", upTo(1), holding); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counted{Succeeded: 1, LeadTimes: 1}, r.counted(t, "staging")); diff != "" {
		t.Errorf("a new environment's first deploy (-want +got):\n%s", diff)
	}
}
