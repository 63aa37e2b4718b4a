package faults

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/registrytest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestRegistryDownWithPinning: with digest pinning on, the registry of two
// of four services does not answer while the plan is made. Those two are
// problems (the status says so) and stay as they were; the other two are
// applied, pinned to their digests, and the history lists only their
// changes.
func TestRegistryDownWithPinning(t *testing.T) {
	const n = 4
	up := registrytest.New(t)
	down := testenv.FreeAddr(t) // nothing listens there
	ref := func(i int, tag string) string {
		if i < 2 {
			return down + "/team/" + svc(i) + ":" + tag
		}
		return up.Ref("team/"+svc(i), tag)
	}
	digests := map[int]string{}
	for i := 2; i < n; i++ {
		up.Push(t, "team/"+svc(i), "1.0.0")
		digests[i] = up.Push(t, "team/"+svc(i), "2.0.0")
	}
	f := newFixture(t, manifest(n, "1.0.0"))
	f.config["registry"] = map[string]any{"pinDigests": true, "verifyDigests": true, "insecure": []any{up.Host(), down},
		"digestCacheTTL": "0s"}
	for i := range n {
		f.env.CreateDeployment(t, f.ns, svc(i), ref(i, "1.0.0"))
	}
	ctx := t.Context()
	a := f.start(t, "replica-a", nil)
	testenv.WaitFor(t, 60*time.Second, "replica-a holding the Lease", func() bool { return f.holder(ctx) == "replica-a" })
	pushed := time.Now()
	rev := f.git.Repo("manifests").Commit(t, "main", manifest(n, "2.0.0"), "to 2.0.0")

	var hist []entry
	testenv.WaitFor(t, 2*time.Minute, "the services of the registry that answers applied, pinned", func() bool {
		imgs, err := f.images(ctx)
		if err != nil {
			return false
		}
		for i := 2; i < n; i++ {
			if imgs[svc(i)] != ref(i, "2.0.0")+"@"+digests[i] {
				return false
			}
		}
		h, ok := f.history(ctx, a)
		if !ok || len(h) == 0 || h[0].Revision != rev {
			return false
		}
		hist = h
		return true
	})
	applied := time.Since(pushed)
	lost := 0
	imgs, err := f.images(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got := imgs[svc(i)]; got != ref(i, "1.0.0") {
			t.Errorf("%s (registry down) runs %s, want it untouched: %s", svc(i), got, ref(i, "1.0.0"))
		}
	}
	for i := 2; i < n; i++ {
		if got := imgs[svc(i)]; got != ref(i, "2.0.0")+"@"+digests[i] {
			lost++
		}
	}
	if e := hist[0]; e.Result != "succeeded" || len(e.Changes) != 2 {
		t.Errorf("history entry of %s = %+v, want succeeded with the 2 changes of the registry that answered", rev[:8], e)
	} else {
		for _, c := range e.Changes {
			if c.Service == svc(0) || c.Service == svc(1) {
				t.Errorf("history entry lists a change of %s, whose registry was down", c.Service)
			}
		}
	}
	// The status names the two as problems, naming the registry.
	var st struct {
		Services []struct {
			Name    string `json:"name"`
			Targets []struct {
				State    string   `json:"state"`
				Problems []string `json:"problems"`
			} `json:"targets"`
		} `json:"services"`
	}
	var raw json.RawMessage
	if code := a.get(ctx, f.token, "/api/v1/environments/devel", &raw); code != http.StatusOK {
		t.Fatalf("GET environment = %d", code)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("decoding the environment: %v\n%s", err, raw)
	}
	problems := map[string]string{}
	for _, s := range st.Services {
		for _, tg := range s.Targets {
			if tg.State == "problem" && len(tg.Problems) > 0 {
				problems[s.Name] = tg.Problems[0]
			}
		}
	}
	for i := range n {
		msg, isProblem := problems[svc(i)]
		switch {
		case i < 2 && (!isProblem || !strings.Contains(msg, down)):
			t.Errorf("%s: problem %q (%v), want one naming the registry %s", svc(i), msg, isProblem, down)
		case i >= 2 && isProblem:
			t.Errorf("%s: problem %q, want none", svc(i), msg)
		}
	}
	table.add(t, row{fault: "5 registry down during plan, digest pinning on", survived: true, lost: lost, recover: applied,
		note: "2 of 4 services on the down registry: problems, untouched; seconds from push to the rest applied"})
}
