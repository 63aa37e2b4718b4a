package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/state/statetest"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// TestStoreLargeState: at 5,000 services × 3 targets the pending plan is
// written and read back identically on the real API server, the status is
// written (trimmed as needed), an approval by the plan's hash is taken, and
// a state written in the old single-ConfigMap format is still read.
func TestStoreLargeState(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	h := newHarness(t, "prod")
	d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(env.Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir()))})
	if err != nil {
		t.Fatal(err)
	}
	s := d.store
	cms := env.Clientset.CoreV1().ConfigMaps(s.Namespace())
	name := state.ConfigMapName("prod")

	// A state as the previous version wrote it: plain JSON in data.
	old := approval.Entry{Revision: "r0", PlanHash: "h0", Changes: json.RawMessage(`[]`), Result: approval.ResultSucceeded}
	oldJSON, _ := json.Marshal([]approval.Entry{old})
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string]string{"history.json": string(oldJSON), "status.json": `{"revision":"r0"}`}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&state.EnvState{Phase: status.PhaseIdle, History: []approval.Entry{old}, Status: json.RawMessage(`{"revision":"r0"}`)}, got); diff != "" {
		t.Errorf("old format read (-want +got):\n%s", diff)
	}

	pending, st := statetest.BigState(t, "prod", 5000, 3)
	if err := s.SetPending(ctx, "prod", pending); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(ctx, "prod", st); err != nil {
		t.Fatal(err)
	}
	got, err = s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pending, got.Pending, rawEqual); diff != "" {
		t.Fatalf("pending read back (-want +got):\n%s", diff)
	}
	view, err := d.Environment(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if view.Revision != pending.Revision || len(view.Services) != 5000 || view.Services[4999].Targets[2].State != status.StateOutOfSync {
		t.Errorf("status read back: revision %s, %d services", view.Revision, len(view.Services))
	}
	if diff := cmp.Diff([]approval.Entry{old}, view.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := cms.List(ctx, metav1.ListOptions{LabelSelector: labelStateOf + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	stored := dataSize(cm)
	for _, p := range parts.Items {
		stored += dataSize(&p)
	}
	t.Logf("5000×3: pending plan %d bytes raw JSON, status %d bytes raw JSON; stored %d bytes in %d ConfigMaps (keys %v, truncated %+v)",
		len(pending.Plan), len(st), stored, 1+len(parts.Items), keys(cm), view.Truncated)

	// An approval by the plan's hash is taken (here handed over, as a
	// replica that does not lead does), and recorded next to the plan.
	if _, err := d.Approve(ctx, "prod", "sha256:other", ghUser("alice")); !errors.As(err, new(*approval.NotPendingError)) {
		t.Errorf("approving another hash: %v, want NotPendingError", err)
	}
	approved, err := d.Approve(ctx, "prod", pending.PlanHash, ghUser("alice"))
	if err != nil {
		t.Fatal(err)
	}
	// The standby counts the approval into the pending record before handing it over.
	counted := cmpopts.IgnoreFields(approval.Pending{}, "Approvals", "Required")
	if diff := cmp.Diff(pending, approved, rawEqual, counted); diff != "" {
		t.Errorf("approved plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"github:alice"}, approved.Approvers()); diff != "" {
		t.Errorf("approvers (-want +got):\n%s", diff)
	}
	got, err = s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Handovers) != 1 || got.Handovers[0].PlanHash != pending.PlanHash || !got.Handovers[0].Approve {
		t.Errorf("handovers = %+v, want one approval of %s", got.Handovers, pending.PlanHash)
	}
	if diff := cmp.Diff(approved, got.Pending, rawEqual); diff != "" {
		t.Errorf("pending after the approval (-want +got):\n%s", diff)
	}

	// A plan twice the size (split across parts): written, read back, and
	// the parts of the previous one deleted once the index moved.
	bigger, _ := statetest.BigState(t, "prod", 10000, 3)
	if err := s.SetPending(ctx, "prod", bigger); err != nil {
		t.Fatal(err)
	}
	got, err = state.NewStore(env.Clientset, s.Namespace()).Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bigger, got.Pending, rawEqual); diff != "" {
		t.Fatalf("bigger pending read back (-want +got):\n%s", diff)
	}
	cm, err = cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts, err = cms.List(ctx, metav1.ListOptions{LabelSelector: labelStateOf + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	want := indexedParts(t, cm)
	for _, p := range parts.Items {
		if !want[p.Name] {
			t.Errorf("part %s left behind after the index moved", p.Name)
		}
	}
	t.Logf("10000×3: pending plan %d bytes raw JSON; %d parts (keys %v)", len(bigger.Plan), len(parts.Items), keys(cm))
	// Cleared: the parts go too.
	if err := s.SetPending(ctx, "prod", nil); err != nil {
		t.Fatal(err)
	}
	parts, err = cms.List(ctx, metav1.ListOptions{LabelSelector: labelStateOf + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts.Items) > 0 {
		t.Errorf("%d parts left after the pending plan was cleared", len(parts.Items))
	}
}

// rawEqual compares JSON values byte for byte, at once (cmp would walk them byte by byte).
var rawEqual = cmp.Comparer(func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })

// dataSize is what cm's data and binaryData hold, keys included: what the
// API server's 1 MiB limit counts.
func dataSize(cm *corev1.ConfigMap) int {
	n := 0
	for k, v := range cm.Data {
		n += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		n += len(k) + len(v)
	}
	return n
}

// indexedParts are the part ConfigMaps the indexes of cm (data[key.parts])
// name.
func indexedParts(t testing.TB, cm *corev1.ConfigMap) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for k, v := range cm.Data {
		if !strings.HasSuffix(k, ".parts") {
			continue
		}
		var idx struct{ Parts []string }
		if err := json.Unmarshal([]byte(v), &idx); err != nil {
			t.Fatalf("decoding %s of configmap %s: %v", k, cm.Name, err)
		}
		for _, p := range idx.Parts {
			names[p] = true
		}
	}
	return names
}

func keys(cm *corev1.ConfigMap) map[string]int {
	out := map[string]int{}
	for k, v := range cm.Data {
		out[k] = len(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = len(v)
	}
	return out
}

// TestStoreSplitPendingConcurrent: while two replicas replace a pending plan
// split across parts, again and again, every Load reads one of the plans whole
// (never a mix of parts, never an error), and the parts replaced are deleted.
func TestStoreSplitPendingConcurrent(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	small := state.WithMaxBytes(32 << 10) // a few parts per plan
	writers := []*state.Store{state.NewStore(env.Clientset, ns, small), state.NewStore(env.Clientset, ns, small)}
	reader := state.NewStore(env.Clientset, ns, small)
	var plans []*approval.Pending
	for i := range 4 {
		p, _ := statetest.BigState(t, "prod", 400+i, 3)
		plans = append(plans, p)
	}
	if err := writers[0].SetPending(ctx, "prod", plans[0]); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, len(writers))
	for w, s := range writers {
		go func() {
			for i := range 6 {
				if err := s.SetPending(ctx, "prod", plans[(w+2*i)%len(plans)]); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	byHash := map[string]*approval.Pending{}
	for _, p := range plans {
		byHash[p.PlanHash] = p
	}
	seen := map[string]bool{}
	reads := 0
	for finished := 0; finished < len(writers); reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writing: %v", err)
			}
			finished++
		default:
		}
		got, err := reader.Load(ctx, "prod")
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		want := byHash[got.Pending.PlanHash]
		if diff := cmp.Diff(want, got.Pending, rawEqual); want == nil || diff != "" {
			t.Fatalf("read %d: not one of the plans written (-want +got):\n%s", reads, diff)
		}
		seen[got.Pending.PlanHash] = true
	}
	if len(seen) < 2 {
		t.Errorf("%d reads saw %d plans; want the reads to overlap the writes", reads, len(seen))
	}
	cm, err := env.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := env.Clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: labelStateOf + "=" + cm.Name})
	if err != nil {
		t.Fatal(err)
	}
	indexed := indexedParts(t, cm)
	var stale []string
	for _, p := range parts.Items {
		if !indexed[p.Name] {
			stale = append(stale, p.Name)
		}
	}
	// A writer that lost a race may leave the parts it wrote; they are
	// deleted by a later write once they are orphans for ten minutes. Those of
	// every index replaced are gone.
	if len(indexed) == 0 || len(stale) > len(indexed) {
		t.Errorf("%d parts indexed, %d left behind: %v", len(indexed), len(stale), stale)
	}
}
