package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// bigState is env's pending plan and status for services × targets, every
// service changing in every target to an image pinned by digest (what
// compresses least), with a layout naming every service.
func bigState(t testing.TB, env string, services, targets int) (*approval.Pending, json.RawMessage) {
	t.Helper()
	rev := fmt.Sprintf("%040x", services*targets)
	envM := &manifest.Environment{Name: env, Root: "environments/" + env + "/manifest.json",
		Layout: &manifest.Layout{File: "environments/" + env + "/manifest.json", Owner: "acme"}}
	var cfgTargets []config.Target
	for j := range targets {
		cfgTargets = append(cfgTargets, config.Target{Name: fmt.Sprintf("t%d", j), Namespace: fmt.Sprintf("apps-%d", j)})
	}
	var changes []reconcile.Change
	for i := range services {
		name := fmt.Sprintf("service-%05d", i)
		sum := sha256.Sum256([]byte(name))
		digest := "sha256:" + hex.EncodeToString(sum[:])
		envM.Services = append(envM.Services, manifest.Service{Name: name, Version: "1.2.3", Source: envM.Root,
			Containers: []manifest.Container{{DockerName: name, DockerTag: "1.2.3", DockerDigest: digest}}})
		envM.Layout.Services = append(envM.Layout.Services, manifest.LayoutService{Name: name, Line: 3 + i*4, Column: 5, Pointer: fmt.Sprintf("/services/%d", i)})
		for _, tg := range cfgTargets {
			old := sha256.Sum256([]byte(name + tg.Name))
			changes = append(changes, reconcile.Change{Service: name, Target: tg.Name, Namespace: tg.Namespace,
				Kind: "Deployment", Name: name, Container: "app",
				From: "registry.example.com/acme/" + name + ":1.2.2@sha256:" + hex.EncodeToString(old[:]),
				To:   "registry.example.com/acme/" + name + ":1.2.3@" + digest})
		}
	}
	plan := &reconcile.Plan{Environment: env, Revision: rev, Changes: changes, PlanHash: reconcile.Hash(env, rev, changes),
		Blocked: []reconcile.Blocked{}, Problems: []reconcile.Problem{}, Unmanaged: []reconcile.Unmanaged{}}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	obs := status.Observe(gitsource.Snapshot{Revision: rev, Time: time.Unix(1_800_000_000, 0)}, envM, plan, cfgTargets, nil)
	obs.ObservedAt = time.Unix(1_800_000_005, 0).UTC()
	st, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	return &approval.Pending{Revision: rev, PlanHash: plan.PlanHash, Plan: planJSON, ProposedAt: time.Unix(1_800_000_010, 0).UTC()}, st
}

// TestEncodeStateTrimOrder shrinks the budget step by step: the state is kept
// plain, then compressed, then a pending plan taking more than half the
// budget is split, then the history goes (oldest first), then the layout,
// then the per-service detail, and only then is the status split; the
// pending plan and the history kept always read back whole.
func TestEncodeStateTrimOrder(t *testing.T) {
	pending, st := bigState(t, "prod", 100, 3)
	var history []approval.Entry
	for i := range 20 {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		history = append(history, approval.Entry{Revision: fmt.Sprint(i), PlanHash: hex.EncodeToString(sum[:]),
			Changes: json.RawMessage(`[{"to":"` + hex.EncodeToString(sum[:]) + `"}]`), Result: approval.ResultSucceeded})
	}
	pendingJSON, err := json.Marshal(pending)
	if err != nil {
		t.Fatal(err)
	}
	pendingZ, err := gzipBytes(pendingJSON)
	if err != nil {
		t.Fatal(err)
	}
	_, bigStatus := bigState(t, "prod", 250, 3) // no pending: only the status to split
	stages := map[string]bool{}
	// The sweep, and the exact size of the status without its layout (a
	// step the sweep may jump over).
	noLayout, err := trimLayout(bigStatus)
	if err != nil {
		t.Fatal(err)
	}
	noLayoutZ, err := gzipBytes(noLayout)
	if err != nil {
		t.Fatal(err)
	}
	budgets := []int{len(keyStatus+suffixGzip) + len(noLayoutZ)}
	for budget := 1 << 20; budget >= 600; budget -= budget / 8 {
		budgets = append(budgets, budget)
	}
	for _, budget := range budgets {
		for _, in := range []*EnvState{{Pending: pending, Status: st, History: history}, {Status: bigStatus}} {
			if in.Pending != nil && budget < 1500 {
				continue // the index of the parts alone is about that size
			}
			history, origStatus := in.History, in.Status
			e, err := encodeState("stagehand-state-prod", in, budget)
			if err != nil {
				t.Fatalf("budget %d: %v", budget, err)
			}
			if e.size() > budget {
				t.Fatalf("budget %d: encoded %d bytes", budget, e.size())
			}
			var obs status.Observation
			if err := json.Unmarshal(in.Status, &obs); err != nil {
				t.Fatal(err)
			}
			tr := obs.Truncated
			if tr == nil {
				tr = &status.Truncation{}
			}
			if in.HistoryDropped != len(history)-len(in.History) {
				t.Errorf("budget %d: historyDropped %d, kept %d of %d", budget, in.HistoryDropped, len(in.History), len(history))
			}
			_, pendingSplit := e.data[keyPending+suffixParts]
			_, statusSplit := e.data[keyStatus+suffixParts]
			switch {
			case statusSplit:
				stages["status split"] = true
			case tr.ServiceDetailOmitted:
				stages["detail omitted"] = true
			case tr.LayoutOmitted:
				stages["layout omitted"] = true
			case in.HistoryDropped > 0:
				stages["history trimmed"] = true
			case pendingSplit:
				stages["pending split"] = true
			case len(e.binary) > 0:
				stages["compressed"] = true
			default:
				stages["plain"] = true
			}
			// Each trim comes only once everything before it is exhausted.
			if in.HistoryDropped > 0 && len(e.binary) == 0 {
				t.Errorf("budget %d: history dropped before compressing", budget)
			}
			if tr.LayoutOmitted && len(in.History) > 0 {
				// Kept again after the layout went: without any history,
				// the layout would not have fitted either.
				again := &EnvState{Pending: in.Pending, Status: origStatus}
				if _, err := encodeState("stagehand-state-prod", again, budget); err != nil {
					t.Fatal(err)
				}
				var o status.Observation
				if err := json.Unmarshal(again.Status, &o); err != nil || o.Truncated == nil || !o.Truncated.LayoutOmitted {
					t.Errorf("budget %d: layout omitted while %d history entries are kept, yet it fits without history", budget, len(in.History))
				}
			}
			if tr.ServiceDetailOmitted && !tr.LayoutOmitted {
				t.Errorf("budget %d: detail omitted before the layout", budget)
			}
			if statusSplit && !tr.ServiceDetailOmitted {
				t.Errorf("budget %d: status split before its detail was omitted", budget)
			}
			if pendingSplit && len(pendingZ) <= budget/2 && !tr.ServiceDetailOmitted {
				t.Errorf("budget %d: pending (%d bytes compressed) split before everything else was trimmed", budget, len(pendingZ))
			}
			if tr.LayoutOmitted && (obs.Layout != nil || !obs.LayoutOmitted) {
				t.Errorf("budget %d: layout %v, layoutOmitted %v", budget, obs.Layout != nil, obs.LayoutOmitted)
			}
			if tr.ServiceDetailOmitted && (obs.Services[0].Desired != nil || obs.Services[0].Targets[0].Images != nil || obs.Services[0].Targets[0].State != status.StateOutOfSync) {
				t.Errorf("budget %d: service detail kept or state lost: %+v", budget, obs.Services[0])
			}
			if !tr.ServiceDetailOmitted && len(obs.Services[0].Targets[0].Changes) != 1 {
				t.Errorf("budget %d: changes lost with the detail kept: %+v", budget, obs.Services[0])
			}
			parts := map[string]*corev1.ConfigMap{}
			for _, p := range e.parts {
				parts[p.Name] = p
			}
			cm := &corev1.ConfigMap{Data: e.data, BinaryData: e.binary}
			got, err := decodeState(context.Background(), cm, &partSource{get: func(_ context.Context, name string) (*corev1.ConfigMap, error) {
				if p, ok := parts[name]; ok {
					return p, nil
				}
				return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
			}})
			if err != nil {
				t.Fatalf("budget %d: decoding: %v", budget, err)
			}
			if diff := cmp.Diff(in.Pending, got.Pending, rawEqual); diff != "" {
				t.Fatalf("budget %d: pending read back (-want +got):\n%s", budget, diff)
			}
			if diff := cmp.Diff(in.History, got.History, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("budget %d: history read back (-want +got):\n%s", budget, diff)
			}
			if diff := cmp.Diff(in.Status, got.Status, rawEqual); diff != "" {
				t.Errorf("budget %d: status read back (-want +got):\n%s", budget, diff)
			}
		}
	}
	for _, name := range []string{"plain", "compressed", "pending split", "history trimmed", "layout omitted", "detail omitted", "status split"} {
		if !stages[name] {
			t.Errorf("no budget reached stage %q", name)
		}
	}
}

// TestDecodeStatePartsMismatch: parts that do not add up to the index's hash
// (the index moved on and the old parts were replaced) are errPartGone, so
// that the reader reads again instead of assembling a mix of two versions.
func TestDecodeStatePartsMismatch(t *testing.T) {
	pending, _ := bigState(t, "prod", 300, 3)
	e, err := encodeState("s", &EnvState{Pending: pending}, 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.parts) < 2 {
		t.Fatalf("%d parts, want several", len(e.parts))
	}
	get := &partSource{get: func(_ context.Context, name string) (*corev1.ConfigMap, error) {
		for _, p := range e.parts {
			if p.Name == name {
				return p, nil
			}
		}
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}}
	e.parts[1] = e.parts[0].DeepCopy() // another version's bytes under the same name
	e.parts[1].Name = e.parts[0].Name[:len(e.parts[0].Name)-1] + "1"
	_, err = decodeState(context.Background(), &corev1.ConfigMap{Data: e.data}, get)
	if !errors.Is(err, errPartGone) {
		t.Errorf("decoding mixed parts: %v, want errPartGone", err)
	}
	e.parts = e.parts[:1]
	_, err = decodeState(context.Background(), &corev1.ConfigMap{Data: e.data}, get)
	if !errors.Is(err, errPartGone) {
		t.Errorf("decoding with a part missing: %v, want errPartGone", err)
	}
	// An index claiming an absurd size is refused before anything is allocated.
	for _, size := range []string{"-1", "1099511627776"} {
		bad := &corev1.ConfigMap{Data: map[string]string{keyPending + suffixParts: `{"sha256":"00","size":` + size + `,"parts":["x"]}`}}
		if _, err := decodeState(context.Background(), bad, get); err == nil || errors.Is(err, errPartGone) {
			t.Errorf("decoding an index of size %s: %v, want an error naming the size", size, err)
		}
	}
}

// TestStoreLargeState: at 5,000 services × 3 targets the pending plan is
// written and read back identically on the real API server, the status is
// written (trimmed as needed), an approval by the plan's hash is taken, and
// a state written in the old single-ConfigMap format is still read.
func TestStoreLargeState(t *testing.T) {
	env := cluster.Env(t)
	ctx := context.Background()
	h := newHarness(t, "prod")
	d, err := New(h.cfg, WithRESTConfig(env.Config), WithSourceOptions(gitsource.WithCacheDir(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	s := d.store
	cms := env.Clientset.CoreV1().ConfigMaps(s.namespace)
	name := ConfigMapName("prod")

	// A state as the previous version wrote it: plain JSON in data.
	old := approval.Entry{Revision: "r0", PlanHash: "h0", Changes: json.RawMessage(`[]`), Result: approval.ResultSucceeded}
	oldJSON, _ := json.Marshal([]approval.Entry{old})
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string]string{keyHistory: string(oldJSON), keyStatus: `{"revision":"r0"}`}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&EnvState{History: []approval.Entry{old}, Status: json.RawMessage(`{"revision":"r0"}`)}, got); diff != "" {
		t.Errorf("old format read (-want +got):\n%s", diff)
	}

	pending, st := bigState(t, "prod", 5000, 3)
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
	stored := (&encoded{data: cm.Data, binary: cm.BinaryData}).size()
	for _, p := range parts.Items {
		stored += (&encoded{data: p.Data, binary: p.BinaryData}).size()
	}
	pz, _ := gzipBytes(pending.Plan)
	sz, _ := gzipBytes(st)
	t.Logf("5000×3: pending plan %d bytes raw JSON (%d gzip), status %d bytes raw JSON (%d gzip); stored %d bytes in %d ConfigMaps (keys %v, truncated %+v)",
		len(pending.Plan), len(pz), len(st), len(sz), stored, 1+len(parts.Items), keys(cm), view.Truncated)

	// An approval by the plan's hash is taken (here handed over, as a
	// replica that does not lead does), and recorded next to the plan.
	if _, err := d.Approve(ctx, "prod", "sha256:other", "alice"); !errors.As(err, new(*approval.NotPendingError)) {
		t.Errorf("approving another hash: %v, want NotPendingError", err)
	}
	approved, err := d.Approve(ctx, "prod", pending.PlanHash, "alice")
	if err != nil {
		t.Fatal(err)
	}
	// The standby counts the approval into the pending record before handing it over.
	counted := cmpopts.IgnoreFields(approval.Pending{}, "Approvals", "Required")
	if diff := cmp.Diff(pending, approved, rawEqual, counted); diff != "" {
		t.Errorf("approved plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice"}, approved.Approvers()); diff != "" {
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
	bigger, _ := bigState(t, "prod", 10000, 3)
	if err := s.SetPending(ctx, "prod", bigger); err != nil {
		t.Fatal(err)
	}
	got, err = NewStore(env.Clientset, s.namespace).Load(ctx, "prod")
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
	want := partNames(cm)
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
	writers := []*Store{NewStore(env.Clientset, ns), NewStore(env.Clientset, ns)}
	reader := NewStore(env.Clientset, ns)
	var plans []*approval.Pending
	for i := range 4 {
		p, _ := bigState(t, "prod", 400+i, 3)
		plans = append(plans, p)
	}
	for _, s := range append(writers, reader) {
		s.maxBytes = 32 << 10 // a few parts per plan
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
	cm, err := env.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := env.Clientset.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: labelStateOf + "=" + cm.Name})
	if err != nil {
		t.Fatal(err)
	}
	indexed := partNames(cm)
	var stale []string
	for _, p := range parts.Items {
		if !indexed[p.Name] {
			stale = append(stale, p.Name)
		}
	}
	// A writer that lost a race may leave the parts it wrote; they are
	// deleted by a later write once orphanPartAge has passed. Those of
	// every index replaced are gone.
	if len(indexed) == 0 || len(stale) > len(indexed) {
		t.Errorf("%d parts indexed, %d left behind: %v", len(indexed), len(stale), stale)
	}
}

// BenchmarkEncodeState5000x3 is what every write of a 5,000 services × 3
// targets state costs in CPU: compressing the plan and the status, trimming
// the status, splitting the plan.
func BenchmarkEncodeState5000x3(b *testing.B) {
	pending, st := bigState(b, "prod", 5000, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeState("stagehand-state-prod", &EnvState{Pending: pending, Status: st}, maxStateBytes); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeStatePartsCached: a split value assembled once is not fetched
// again (the worker reads the state every second), but a new index is.
func TestDecodeStatePartsCached(t *testing.T) {
	p1, _ := bigState(t, "prod", 200, 3)
	p2, _ := bigState(t, "prod", 201, 3)
	byName := map[string]*corev1.ConfigMap{}
	var cms []*corev1.ConfigMap
	for _, p := range []*approval.Pending{p1, p2} {
		e, err := encodeState("s", &EnvState{Pending: p}, 8<<10)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range e.parts {
			byName[part.Name] = part
		}
		cms = append(cms, &corev1.ConfigMap{Data: e.data})
	}
	gets := 0
	src := &partSource{get: func(_ context.Context, name string) (*corev1.ConfigMap, error) {
		gets++
		return byName[name], nil
	}}
	for i, tc := range []struct {
		cm      *corev1.ConfigMap
		want    *approval.Pending
		fetches bool
	}{{cms[0], p1, true}, {cms[0], p1, false}, {cms[1], p2, true}, {cms[0], p1, false}} {
		before := gets
		got, err := decodeState(context.Background(), tc.cm, src)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got.Pending, rawEqual); diff != "" {
			t.Errorf("read %d (-want +got):\n%s", i, diff)
		}
		if fetched := gets > before; fetched != tc.fetches {
			t.Errorf("read %d fetched parts: %v, want %v", i, fetched, tc.fetches)
		}
	}
}

// TestEncodeStateSplitsUnreported: outcomes kept for GitHub hold their whole
// plans; several of a large plan are split into parts like a pending plan,
// and read back whole, instead of failing every later write of the state.
func TestEncodeStateSplitsUnreported(t *testing.T) {
	pending, _ := bigState(t, "prod", 300, 3)
	var plan reconcile.Plan
	if err := json.Unmarshal(pending.Plan, &plan); err != nil {
		t.Fatal(err)
	}
	var kept []Unreported
	for i := range 4 {
		kept = append(kept, Unreported{ID: fmt.Sprint(i), Kind: reportSuperseded, By: fmt.Sprintf("%040d", i),
			Proposal: approval.Proposal{Environment: "prod", Revision: plan.Revision, Plan: &plan}, Attempts: 1})
	}
	in := &EnvState{Unreported: kept}
	e, err := encodeState("stagehand-state-prod", in, 8<<10)
	if err != nil {
		t.Fatalf("encoding 4 kept outcomes of a %d-change plan in 8 KiB: %v", len(plan.Changes), err)
	}
	if _, split := e.data[keyUnreported+suffixParts]; !split {
		t.Fatalf("kept outcomes not split (keys %v)", slices.Collect(maps.Keys(e.data)))
	}
	get := &partSource{get: func(_ context.Context, name string) (*corev1.ConfigMap, error) {
		for _, p := range e.parts {
			if p.Name == name {
				return p, nil
			}
		}
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}}
	out, err := decodeState(context.Background(), &corev1.ConfigMap{Data: e.data, BinaryData: e.binary}, get)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kept, out.Unreported); diff != "" {
		t.Errorf("kept outcomes read back (-written +read):\n%s", diff)
	}
}
