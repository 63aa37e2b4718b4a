package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// manifest is devel's manifest.json asking for version of n services
// svc-00 … svc-(n-1).
func manifest(n int, version string) map[string]string {
	type container struct {
		DockerTag string `json:"dockerTag"`
	}
	type service struct {
		Name       string      `json:"name"`
		Containers []container `json:"containers"`
	}
	m := struct {
		SkipConfirmation bool      `json:"skipConfirmation"`
		Services         []service `json:"services"`
	}{SkipConfirmation: true}
	for i := range n {
		m.Services = append(m.Services, service{Name: svc(i), Containers: []container{{DockerTag: version}}})
	}
	b, _ := json.Marshal(m)
	return map[string]string{"environments/devel/manifest.json": string(b)}
}

// allServices reports whether e changes each of svc(0) … svc(n-1) once.
func allServices(e entry, n int) bool {
	seen := map[string]bool{}
	for _, c := range e.Changes {
		seen[c.Service] = true
	}
	if len(e.Changes) != n || len(seen) != n {
		return false
	}
	for i := range n {
		if !seen[svc(i)] {
			return false
		}
	}
	return true
}

func svc(i int) string { return fmt.Sprintf("svc-%02d", i) }

// image is what svc(i) runs at version.
func image(i int, version string) string { return "registry.invalid/team/" + svc(i) + ":" + version }

// workloads creates n Deployments running version 1.0.0.
func (f *fixture) workloads(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		f.env.CreateDeployment(t, f.ns, svc(i), image(i, "1.0.0"))
	}
}

// TestLeaderKilledMidApply: the leader is SIGKILLed once the first of 50
// workloads of an apply is patched; the standby takes the Lease and finishes
// the apply. Every workload runs the new version, none was patched twice
// (the API server's audit log), and the history holds exactly one entry
// for the revision, succeeded: the plan the killed leader was applying,
// with all its changes.
func TestLeaderKilledMidApply(t *testing.T) {
	const n = 50
	f := newFixture(t, manifest(n, "1.0.0"))
	f.workloads(t, n)
	ctx := t.Context()

	a := f.start(t, "replica-a", nil)
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	b := f.start(t, "replica-b", nil)
	// The leader has seen the first revision (nothing to do) before the push.
	testenv.WaitFor(t, 60*time.Second, "replica-a's API up", func() bool {
		_, ok := f.history(ctx, a)
		return ok
	})

	w, err := f.env.Clientset.AppsV1().Deployments(f.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "50 services to 2.0.0")

	// Kill the leader as soon as a first workload asks for 2.0.0.
	deadline := time.After(2 * time.Minute)
	for first := false; !first; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				continue
			}
			if d, ok := ev.Object.(*appsv1.Deployment); ok && strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, ":2.0.0") {
				first = true
			}
		case <-deadline:
			t.Fatalf("no workload patched to 2.0.0 within 2 minutes of the push\n%s", tail(a.out.String(), 4000))
		}
	}
	a.kill(t)
	killed := time.Now()
	before := f.patches(t)
	t.Logf("leader killed with %d of %d workloads patched", len(before), n)
	// The plan the killed leader was applying, as the state keeps it.
	var approved struct {
		InFlight *struct {
			Revision string `json:"revision"`
			PlanHash string `json:"planHash"`
		} `json:"inFlight"`
	}
	if code := b.get(ctx, f.token, "/api/v1/environments/devel", &approved); code != http.StatusOK || approved.InFlight == nil || approved.InFlight.Revision != rev {
		t.Fatalf("devel on replica-b after the kill: %d, inFlight %+v; want the killed leader's apply of %s in flight", code, approved.InFlight, rev[:8])
	}

	var hist []entry
	testenv.WaitFor(t, 3*time.Minute, "replica-b to finish the apply: every workload on 2.0.0 and one history entry", func() bool {
		imgs, err := f.images(ctx)
		if err != nil {
			return false
		}
		for i := range n {
			if imgs[svc(i)] != image(i, "2.0.0") {
				return false
			}
		}
		h, ok := f.history(ctx, b)
		if !ok || len(h) == 0 || h[0].Result == "interrupted" {
			return false
		}
		hist = h
		return true
	})
	recovered := time.Since(killed)
	if got := f.holder(ctx); got != "replica-b" {
		t.Errorf("Lease holder after the kill = %q, want replica-b", got)
	}

	// Give a late duplicate a chance to show in the audit log.
	time.Sleep(2 * time.Second)
	// Lost: a workload not on 2.0.0 (the wait above fails first). Patched
	// twice: two patches in the audit log, or a spec changed twice (the
	// generation: 1 at creation, 2 after the one change).
	twice, lost := 0, 0
	counts := f.patches(t)
	gens, err := f.generations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := svc(i)
		if counts[name] > 1 || gens[name] > 2 {
			twice++
			t.Errorf("%s patched %d times (generation %d) for one plan: %s", name, counts[name], gens[name], f.auditOf(t, name))
		}
		if gens[name] < 2 {
			lost++
			t.Errorf("%s: generation %d, its spec never changed", name, gens[name])
		}
		if counts[name] == 0 {
			// Its spec changed (above), the audit log missed the request.
			t.Logf("%s: no patch in the audit log though its spec changed once: %s", name, f.auditOf(t, name))
		}
	}
	var ofRev []entry
	for _, e := range hist {
		if e.Revision == rev {
			ofRev = append(ofRev, e)
		}
	}
	if len(ofRev) != 1 || ofRev[0].Result != "succeeded" || ofRev[0].Approver != identity.SkipConfirmation.String() {
		t.Errorf("history entries of %s = %+v, want one succeeded by stagehand:skipConfirmation", rev[:8], ofRev)
	}
	// The one entry is the plan that was approved, whole: its planHash and
	// every change, not the remainder the standby continued.
	if len(ofRev) == 1 {
		if e := ofRev[0]; e.PlanHash != approved.InFlight.PlanHash || !allServices(e, n) {
			t.Errorf("history entry %d: planHash %s with %d changes; want the approved %s with one change for each of %d services",
				e.ID, e.PlanHash, len(e.Changes), approved.InFlight.PlanHash, n)
		}
	}
	note := fmt.Sprintf("killed with %d/%d patched", len(before), n)
	table.add(t, row{fault: "1 leader SIGKILLed mid-apply (50 workloads)", survived: true, lost: lost, twice: twice, recover: recovered, note: note})
}
