package daemon

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/state/statetest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// gitBlob is git's blob hash of content, computed here by hand.
func gitBlob(content string) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(content), content)))
	return hex.EncodeToString(sum[:])
}

// TestHistoryKeepsResolvedManifest: every applied entry is numbered and keeps
// the manifest resolved at its revision (services, files with their blob
// hashes, the include layout); entries survive a restart, the numbering goes
// on after it, and the API serves the list without manifests and each entry
// with its own.
func TestHistoryKeepsResolvedManifest(t *testing.T) {
	h := newHarness(t, "devel")
	root := `{"skipConfirmation": true, "includes": ["./web.json"], "services": []}`
	web := func(tag string) string {
		return `{"services": [{"name": "web", "containers": [{"dockerTag": "` + tag + `"}]}]}`
	}
	rev1 := h.git.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/manifest.json": root,
		"environments/devel/web.json": web("1.1.0")}, "include web")
	r := h.start()
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.1.0")
	var list []approval.Entry
	testenv.WaitFor(t, 30*time.Second, "the first history entry", func() bool { list = r.history(t, "devel"); return len(list) == 1 })
	if list[0].ID != 1 || list[0].Manifest != nil || list[0].Revision != rev1 {
		t.Fatalf("history list = %+v; want entry 1 for %s, without its manifest", list[0], rev1)
	}
	if v := r.environment(t, "devel"); v.LastResult == nil || v.LastResult.Manifest != nil {
		t.Errorf("lastResult = %+v; want entry 1 without its manifest", v.LastResult)
	}

	got := r.entry(t, "devel", 1)
	want := &approval.Manifest{
		Root: "environments/devel/manifest.json",
		Services: []manifest.Service{{Name: "web", Source: "environments/devel/web.json",
			Containers: []manifest.Container{{DockerName: "web", DockerTag: "1.1.0"}}}},
		Files: []approval.File{{Path: "environments/devel/manifest.json", Blob: gitBlob(root)},
			{Path: "environments/devel/web.json", Blob: gitBlob(web("1.1.0"))}},
		Layout: &manifest.Layout{File: "environments/devel/manifest.json", Owner: "manifest", Services: []manifest.LayoutService{},
			Includes: []*manifest.Layout{{File: "environments/devel/web.json", Owner: "web",
				Services: []manifest.LayoutService{{Name: "web", Line: 1, Column: 15, Pointer: "/services/0"}}, Includes: []*manifest.Layout{}}}},
	}
	if diff := cmp.Diff(want, got.Manifest); diff != "" {
		t.Errorf("entry 1's manifest (-want +got):\n%s", diff)
	}
	if got.ID != 1 || got.Result != approval.ResultSucceeded || got.Revision != rev1 {
		t.Errorf("entry 1 = %+v", got)
	}

	// A restart: the entry is still there, in full, and the next one is 2.
	r.stop()
	r = h.start()
	if e := r.entry(t, "devel", 1); e.Manifest == nil || e.Manifest.Services[0].Containers[0].DockerTag != "1.1.0" {
		t.Errorf("entry 1 after a restart = %+v", e)
	}
	rev2 := h.git.Repo("manifests").Commit(t, "main", map[string]string{"environments/devel/web.json": web("1.2.0")}, "web 1.2.0")
	r.push(t, h, "d1")
	waitImage(t, h.ns["devel"], "web", imageRepo+"web:1.2.0")
	testenv.WaitFor(t, 30*time.Second, "the second history entry", func() bool { list = r.history(t, "devel"); return len(list) == 2 })
	if list[0].ID != 2 || list[0].Revision != rev2 || list[1].ID != 1 {
		t.Errorf("history after the restart = %d for %s, %d; want 2 for %s, 1", list[0].ID, approval.ShortRevision(list[0].Revision), list[1].ID, approval.ShortRevision(rev2))
	}
	e2 := r.entry(t, "devel", 2)
	if e2.Manifest == nil || e2.Manifest.Files[1].Blob != gitBlob(web("1.2.0")) || e2.Manifest.Files[0].Blob != gitBlob(root) {
		t.Errorf("entry 2's files = %+v", e2.Manifest)
	}
	// Through the daemon's own API (what the rollback command uses).
	if prev, ok := approval.Previous(list); !ok || prev.ID != 1 {
		t.Errorf("Previous = %+v, %v; want entry 1", prev, ok)
	}
	if _, err := r.d.HistoryEntry(context.Background(), "devel", 9); err == nil || !strings.Contains(err.Error(), "holds entries 1 to 2") {
		t.Errorf("HistoryEntry(9) = %v", err)
	}
	if code, b := r.call(t, "GET", "/api/v1/environments/devel/history/9", testToken, nil); code != http.StatusNotFound {
		t.Errorf("GET entry 9 = %d %s, want 404", code, b)
	}
}

// entry reads one history entry through the API.
func (r *running) entry(t testing.TB, env string, id int64) approval.Entry {
	t.Helper()
	code, b := r.call(t, "GET", fmt.Sprintf("/api/v1/environments/%s/history/%d", env, id), testToken, nil)
	if code != http.StatusOK {
		t.Fatalf("GET history entry %d of %s: %d %s", id, env, code, b)
	}
	var out struct{ Entry approval.Entry }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Entry
}

// TestStoreHistoryLimit: the 101st entry drops the oldest; ids go on from
// the last one recorded, with every entry keeping a resolved manifest.
func TestStoreHistoryLimit(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	s := state.NewStore(env.Clientset, env.Namespace(t))
	// A large environment: unpacked, fewer than half of these manifests would fit.
	m := statetest.Manifest(200)
	for i := 1; i <= state.DefaultHistoryLimit+1; i++ {
		e := approval.Entry{Revision: fmt.Sprintf("%040d", i), PlanHash: fmt.Sprint("sha256:", i), Result: approval.ResultSucceeded,
			Changes: json.RawMessage(`[]`), Manifest: m}
		id, err := s.Record(ctx, "prod", e)
		if err != nil || id != int64(i) {
			t.Fatalf("record %d = %d, %v", i, id, err)
		}
	}
	st, err := state.NewStore(env.Clientset, s.Namespace()).Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.History); n != state.DefaultHistoryLimit || st.History[0].ID != 101 || st.History[n-1].ID != 2 || st.HistoryDropped != 0 {
		t.Fatalf("history holds %d entries, %d to %d (dropped for size %d); want 100, 101 to 2", n, st.History[0].ID, st.History[n-1].ID, st.HistoryDropped)
	}
	if diff := cmp.Diff(m, st.History[99].Manifest); diff != "" {
		t.Errorf("oldest entry's manifest (-want +got):\n%s", diff)
	}
}

// TestRejectedEntryKeepsItsManifest: a rejected plan's entry has the manifest
// it would have deployed.
func TestRejectedEntryKeepsItsManifest(t *testing.T) {
	h := newHarness(t, "prod")
	r := h.start()
	rev := h.git.Head(t, "manifests", "main")
	p := r.waitPending(t, "prod", rev)
	if code, b := r.call(t, "POST", "/api/v1/environments/prod/reject", testToken, map[string]string{"planHash": p.PlanHash}); code != http.StatusOK {
		t.Fatalf("reject = %d %s", code, b)
	}
	e := r.entry(t, "prod", 1)
	if e.Result != approval.ResultRejected || e.Manifest == nil || e.Manifest.Root != "environments/prod/manifest.json" ||
		len(e.Manifest.Files) != 1 || e.Manifest.Files[0].Blob != gitBlob(manifestJSON(false, map[string]string{"web": "1.0.0"})) ||
		e.Manifest.Services[0].Containers[0].DockerTag != "1.0.0" {
		t.Errorf("rejected entry = %+v, manifest %+v", e, e.Manifest)
	}
}
