package faults

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestCrashBetweenApprovalAndApply: the only replica is SIGKILLed the moment
// it has answered an approval (202), before the apply could finish; started
// again, it applies the approved plan exactly once, and the history keeps
// who approved it, in one entry of the approved planHash with all its
// changes.
func TestCrashBetweenApprovalAndApply(t *testing.T) {
	const n = 5
	f := newFixture(t, manualManifest(n, "1.0.0"))
	f.workloads(t, n)
	ctx := t.Context()
	a := f.start(t, "replica-a", nil)
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	rev := f.git.Repo("manifests").Commit(t, "main", manualManifest(n, "2.0.0"), "5 services to 2.0.0, approved by hand")

	var planHash string
	testenv.WaitFor(t, 60*time.Second, "a plan of the new revision pending", func() bool {
		var e struct {
			Pending *struct {
				Revision string `json:"revision"`
				PlanHash string `json:"planHash"`
			} `json:"pending"`
		}
		if a.get(ctx, f.token, "/api/v1/environments/devel", &e) != http.StatusOK || e.Pending == nil || e.Pending.Revision != rev {
			return false
		}
		planHash = e.Pending.PlanHash
		return true
	})
	body, _ := json.Marshal(map[string]string{"planHash": planHash})
	var answer struct {
		Status string `json:"status"`
	}
	if code := a.do(ctx, http.MethodPost, f.token, "/api/v1/environments/devel/approve", string(body), &answer); code != http.StatusAccepted || answer.Status != "approved" {
		t.Fatalf("approve = %d %+v, want 202 approved", code, answer)
	}
	a.kill(t)
	killed := time.Now()
	patchedAtKill := len(f.patches(t))

	a.run(t)
	var hist []entry
	testenv.WaitFor(t, 3*time.Minute, "the approved plan applied after the restart", func() bool {
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
		if !ok || len(h) == 0 || h[0].Revision != rev || h[0].Result == "interrupted" {
			return false
		}
		hist = h
		return true
	})
	recovered := time.Since(killed)
	time.Sleep(2 * time.Second) // a late second apply would show in the audit log
	counts := f.patches(t)
	gens, err := f.generations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	twice, lost := 0, 0
	for i := range n {
		name := svc(i)
		if counts[name] > 1 || gens[name] > 2 {
			twice++
			t.Errorf("%s patched %d times (generation %d) for one approval: %s", name, counts[name], gens[name], f.auditOf(t, name))
		}
		if gens[name] < 2 {
			lost++
			t.Errorf("%s: generation %d, never changed", name, gens[name])
		}
	}
	var ofRev []entry
	for _, e := range hist {
		if e.Revision == rev {
			ofRev = append(ofRev, e)
		}
	}
	if len(ofRev) != 1 || ofRev[0].Result != "succeeded" || ofRev[0].Approver != "token:operator" {
		t.Fatalf("history entries of %s = %+v, want one succeeded, approved by token:operator", rev[:8], ofRev)
	}
	// The one entry is the plan that was approved, whole, whatever part
	// of it was patched before the crash.
	if e := ofRev[0]; e.PlanHash != planHash || !allServices(e, n) {
		t.Errorf("history entry %d: planHash %s with %d changes; want the approved %s with one change for each of %d services",
			e.ID, e.PlanHash, len(e.Changes), planHash, n)
	}
	note := fmt.Sprintf("killed after the 202 with %d/%d patched", patchedAtKill, n)
	table.add(t, row{fault: "8 crash between approval and apply", survived: true, lost: lost, twice: twice, recover: recovered, note: note})
}

// manualManifest is manifest without skipConfirmation: plans wait for an
// approval.
func manualManifest(n int, version string) map[string]string {
	m := manifest(n, version)
	for k, v := range m {
		m[k] = strings.Replace(v, `"skipConfirmation":true`, `"skipConfirmation":false`, 1)
	}
	return m
}
