package faults

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// stopGrace is the replicas' shutdownGrace in TestStopOnSIGTERM: what a
// Pod's terminationGracePeriodSeconds would give them, made short.
const stopGrace = 3 * time.Second

// errorLine matches a log line at error level: the JSON logger's, or klog's
// own format should a library log around the logger.
var errorLine = regexp.MustCompile(`"level":"error"|^E\d{4} `)

// TestStopOnSIGTERM: two replicas; the leader gets SIGTERM while idle, and
// (a new pair) in the middle of an apply of 30 workloads that roll out
// slowly. It exits with code 0, within its shutdownGrace, without a line
// logged at error level; it has released the Lease by the time it exits
// (the holder is no longer it), and the standby leads soon after, without
// waiting for the Lease to expire.
func TestStopOnSIGTERM(t *testing.T) {
	for _, midApply := range []bool{false, true} {
		name := "idle"
		if midApply {
			name = "mid-apply"
		}
		t.Run(name, func(t *testing.T) {
			const n = 30
			f := newFixture(t, manifest(n, "1.0.0"))
			f.workloads(t, n)
			ctx := t.Context()
			grace := func(cfg map[string]any) { cfg["server"].(map[string]any)["shutdownGrace"] = stopGrace.String() }
			a := f.start(t, "replica-a", grace)
			testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
			b := f.start(t, "replica-b", grace)
			testenv.WaitFor(t, 60*time.Second, "replica-a's API up and devel reconciled", func() bool {
				_, ok := f.history(ctx, a)
				return ok
			})
			testenv.WaitFor(t, 60*time.Second, "replica-b's API up", func() bool {
				_, ok := f.history(ctx, b)
				return ok
			})
			if midApply {
				w, err := f.env.Clientset.AppsV1().Deployments(f.ns).Watch(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "30 services to 2.0.0")
				waitPatched(t, w)
			}

			if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			signalled := time.Now()
			select {
			case <-a.exited:
			case <-time.After(stopGrace + 5*time.Second):
				t.Fatalf("replica-a still runs %s after SIGTERM (shutdownGrace %s)", time.Since(signalled).Round(time.Millisecond), stopGrace)
			}
			took := time.Since(signalled)
			holder := f.holder(ctx)
			if code := a.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("replica-a exited with code %d after SIGTERM, want 0", code)
			}
			// A margin for the process to be reaped and the test to see it.
			if took > stopGrace+time.Second {
				t.Errorf("replica-a exited %s after SIGTERM, past its shutdownGrace %s", took.Round(time.Millisecond), stopGrace)
			}
			var errs []string
			for _, l := range strings.Split(a.out.String(), "\n") {
				if errorLine.MatchString(l) {
					errs = append(errs, l)
				}
			}
			if len(errs) > 0 {
				t.Errorf("replica-a logged %d lines at error level on a normal shutdown:\n%s", len(errs), strings.Join(errs, "\n"))
			}
			if holder == "replica-a" {
				t.Errorf("the Lease still names replica-a after it exited: not released")
			}
			exited := time.Now()
			testenv.WaitFor(t, leaseDuration, "replica-b leading, before replica-a's Lease could expire", func() bool { return f.holder(ctx) == "replica-b" })
			t.Logf("replica-a exited %s after SIGTERM; replica-b led %s after that", took.Round(time.Millisecond), time.Since(exited).Round(time.Millisecond))
			if midApply {
				testenv.WaitFor(t, 3*time.Minute, "replica-b to finish the apply: every workload on 2.0.0", func() bool {
					imgs, err := f.images(ctx)
					if err != nil {
						return false
					}
					for i := range n {
						if imgs[svc(i)] != image(i, "2.0.0") {
							return false
						}
					}
					return true
				})
			}
		})
	}
}

// waitPatched returns once a first Deployment of w asks for 2.0.0.
func waitPatched(t *testing.T, w watch.Interface) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-w.ResultChan():
			if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type == watch.Modified &&
				strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, ":2.0.0") {
				return
			}
		case <-deadline:
			t.Fatal("no workload patched to 2.0.0 within 2 minutes of the push")
		}
	}
}
