package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestAPIServerRestartMidApply: kube-apiserver is stopped once the first of
// 20 workloads of an apply is patched and started again (same port, same
// etcd) a few seconds later. The reconciler (started again if it exited, as
// its Deployment would) ends with every workload on the new version, each
// patched once; the history of the revision is the apply that succeeded,
// after at most interrupted ones (the leader lost its Lease meanwhile):
// nothing half-recorded.
func TestAPIServerRestartMidApply(t *testing.T) {
	const n = 20
	f := newFixture(t, manifest(n, "1.0.0"))
	f.workloads(t, n)
	ctx := t.Context()
	a := f.start(t, "replica-a", nil)
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	testenv.WaitFor(t, 60*time.Second, "replica-a's API up", func() bool {
		_, ok := f.history(ctx, a)
		return ok
	})
	w, err := f.env.Clientset.AppsV1().Deployments(f.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rev := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "20 services to 2.0.0")
	deadline := time.After(2 * time.Minute)
	for first := false; !first; {
		select {
		case ev := <-w.ResultChan():
			if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type == watch.Modified && strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, ":2.0.0") {
				first = true
			}
		case <-deadline:
			t.Fatalf("no workload patched to 2.0.0 within 2 minutes of the push")
		}
	}
	w.Stop()
	if err := f.env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// Meanwhile the reconciler's API answers what needs the API server with
	// 503 and a Retry-After, not 500: it is the server behind it that is down.
	down := map[string]int{}
	for time.Since(stopped) < 3*time.Second {
		code, retry := a.status(ctx, f.token, "/api/v1/environments/devel/history")
		down[fmt.Sprintf("%d Retry-After %q", code, retry)]++
		time.Sleep(200 * time.Millisecond)
	}
	if _, ok := down[`503 Retry-After "5"`]; !ok || len(down) > 2 || (len(down) == 2 && down[`0 Retry-After ""`] == 0) {
		t.Errorf("GET history with the API server down answered %v; want 503 with Retry-After 5 (or no answer once the process exited)", down)
	}
	if err := f.env.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	restarts := 0
	testenv.WaitFor(t, 3*time.Minute, "every workload on 2.0.0 and revision "+rev[:8]+" recorded", func() bool {
		if !a.alive() {
			restarts++
			a.run(t)
		}
		imgs, err := f.images(ctx)
		if err != nil {
			return false
		}
		for i := range n {
			if imgs[svc(i)] != image(i, "2.0.0") {
				return false
			}
		}
		h, ok := f.history(ctx, a)
		return ok && len(h) > 0 && h[0].Revision == rev && h[0].Result != "interrupted"
	})
	recovered := time.Since(stopped)
	time.Sleep(2 * time.Second)
	hist, _ := f.history(ctx, a)
	var ofRev []entry
	for _, e := range hist {
		if e.Revision == rev {
			ofRev = append(ofRev, e)
		}
	}
	// The leader lost its Lease while the API server was down: it recorded
	// the apply as interrupted (docs/reference/api.md: the next leader continues it),
	// and the continuation as succeeded. Nothing else may be there.
	if len(ofRev) == 0 || ofRev[0].Result != "succeeded" {
		t.Errorf("newest history entry of %s = %+v, want succeeded", rev[:8], ofRev)
	}
	for _, e := range ofRev[min(1, len(ofRev)):] {
		if e.Result != "interrupted" {
			t.Errorf("earlier history entry %d of %s: %s %q, want only interrupted ones before the one that succeeded", e.ID, rev[:8], e.Result, e.Message)
		}
	}
	counts := f.patches(t)
	gens, err := f.generations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	twice := 0
	for i := range n {
		name := svc(i)
		if counts[name] > 1 || gens[name] > 2 {
			twice++
			t.Errorf("%s patched %d times (generation %d) for one plan: %s", name, counts[name], gens[name], f.auditOf(t, name))
		}
	}
	table.add(t, row{fault: "2 kube-apiserver restarted mid-apply (3 s down)", survived: true, twice: twice, recover: recovered,
		note: fmt.Sprintf("history: %d entries (the last succeeded, any before it interrupted); reconciler restarted %d times; seconds from the stop to the apply recorded", len(ofRev), restarts)})
}

// status GETs path of the replica's API with token and returns the status
// code (0 when unreachable) and the Retry-After header.
func (r *replica) status(ctx context.Context, token, path string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+path, nil)
	if err != nil {
		return 0, ""
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}
