package flagger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// TestDaemonRollsBackFailedCanaryOnce runs the reconciler's daemon, built
// from its parts as `reconciler run` builds it, on environment test
// (skipConfirmation, onFailedRollout: rollback) whose Deployment web a
// Canary targets, and pushes web 2.0 with a failing analysis webhook. While
// Flagger analyses, the environment's status says so ("Deployment web on a:
// canary analysing: 0 of 3 iterations, …", what the page and `reconciler
// status` show); once Flagger failed the canary and rolled it back, the
// history records the deploy rolled back with Flagger's message and nothing
// left to patch, and the Deployment's image history is the daemon's one
// patch: no second rollback.
func TestDaemonRollsBackFailedCanaryOnce(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t, true)
	ns := setup(t, hook, 3)
	env := cluster.Env(t)
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	git.Repo("manifests").Commit(t, "main", map[string]string{"environments/test/manifest.json": manifestOf("2.0")}, "web 2.0")
	stateNS := env.Namespace(t)
	f := false
	cfg := &config.Config{
		Source: config.Source{URL: url, Branch: "main", Root: ".", Interval: config.Duration{Duration: time.Hour}},
		Environments: map[string]config.Environment{"test": {LockPath: "apps/test", OnFailedRollout: config.OnFailedRolloutRollback,
			Targets: []config.Target{{Name: "a", Namespace: ns}}}},
		Registry: config.Registry{VerifyDigests: &f, PinDigests: &f},
		Server:   config.Server{Listen: "127.0.0.1:0"},
		Locks:    config.Locks{Storage: "kubernetes", Namespace: stateNS},
		State:    config.State{Namespace: stateNS},
	}
	cfg.Default()
	cfg.Workloads.RolloutTimeout = config.Duration{Duration: 4 * time.Minute}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	id := daemon.DefaultIdentity()
	var logs testenv.Buffer
	log := logs.Logger()
	b, err := wire.New(cfg, append(wire.DaemonOptions(id, log), wire.WithRESTConfig(env.Config),
		wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()), gitsource.WithJitter(0)))...)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := daemon.PartsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(cfg, append(parts, daemon.WithIdentity(id), daemon.WithLogger(log), daemon.WithLeaderElection(daemon.LeaderElection{Enable: true,
		ReleaseOnCancel: true, LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: 250 * time.Millisecond}))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the daemon did not stop within 30s")
		}
	})

	analysing := regexp.MustCompile(`^Deployment web on a: canary analysing: [0-3] of 3 iterations`)
	var shown string
	var entry *approval.Entry
	t.Cleanup(func() {
		if t.Failed() {
			v, err := d.Environment(context.Background(), "test")
			b, _ := json.Marshal(v)
			t.Logf("environment test: %s (%v)\ndaemon log:\n%s", b, err, logs.String())
		}
	})
	testenv.WaitFor(t, 4*time.Minute, "the daemon to record the deploy of web 2.0", func() bool {
		v, err := d.Environment(ctx, "test")
		if err != nil {
			t.Fatalf("Environment: %v", err)
		}
		if i := slices.IndexFunc(v.Waiting, analysing.MatchString); i >= 0 && shown == "" {
			shown = v.Waiting[i]
		}
		h, err := d.History(ctx, "test")
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		if len(h) > 0 {
			entry = &h[0]
		}
		return entry != nil
	})
	if shown == "" {
		t.Errorf("the environment's status never said where the analysis stood (%s)", analysing)
	}
	wantMsg := "Deployment/web failed: canary web failed: Canary analysis failed, Deployment scaled to zero; " +
		"Flagger rolled back: its primary serves the images from before; rolled back: the workloads run the images from " +
		"before the apply (nothing was left to patch)"
	if entry.Result != approval.ResultRolledBack || !strings.HasPrefix(entry.Message, "rollout failed: ") || !strings.HasSuffix(entry.Message, wantMsg) {
		t.Errorf("history entry %s: %q; want rolled back: rollout failed: … %s", entry.Result, entry.Message, wantMsg)
	}
	if p := phase(t, ns); p != "Failed" {
		t.Errorf("canary web is %s, want Failed", p)
	}

	var writes []string
	evs, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.HasPrefix(ev.UserAgent, wire.UserAgent) && ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Namespace == ns {
			writes = append(writes, ev.Verb+" "+ev.ObjectRef.Name)
		}
	}
	if diff := cmp.Diff([]string{"patch web"}, writes); diff != "" {
		t.Errorf("the daemon's writes to the namespace's Deployments (-want +got):\n%s", diff)
	}
	rss, err := env.Clientset.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	history := map[string]string{}
	for _, rs := range rss.Items {
		history[rs.Annotations["deployment.kubernetes.io/revision"]] = rs.Spec.Template.Spec.Containers[0].Image
	}
	if diff := cmp.Diff(map[string]string{"1": "registry.example/team/web:1.0", "2": "registry.example/team/web:2.0"}, history); diff != "" {
		t.Errorf("web's revisions (ReplicaSets; -want +got):\n%s", diff)
	}
}

// manifestOf is environment test's manifest: service web at tag, applied
// without confirmation.
func manifestOf(tag string) string {
	return fmt.Sprintf(`{"skipConfirmation": true, "services": [{"name": "web", "containers": [{"dockerTag": %q}]}]}`, tag)
}
