package state

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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state/statetest"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// TestEncodeStateTrimOrder shrinks the budget step by step: the state is kept
// plain, then compressed, then a pending plan taking more than half the
// budget is split, then the history goes (oldest first), then the layout,
// then the per-service detail, and only then is the status split; the
// pending plan and the history kept always read back whole.
func TestEncodeStateTrimOrder(t *testing.T) {
	pending, st := statetest.BigState(t, "prod", 100, 3)
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
	_, bigStatus := statetest.BigState(t, "prod", 250, 3) // no pending: only the status to split
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
	pending, _ := statetest.BigState(t, "prod", 300, 3)
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

// rawEqual compares JSON values byte for byte, at once (cmp would walk them byte by byte).
var rawEqual = cmp.Comparer(func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })

// BenchmarkEncodeState5000x3 is what every write of a 5,000 services × 3
// targets state costs in CPU: compressing the plan and the status, trimming
// the status, splitting the plan.
func BenchmarkEncodeState5000x3(b *testing.B) {
	pending, st := statetest.BigState(b, "prod", 5000, 3)
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
	p1, _ := statetest.BigState(t, "prod", 200, 3)
	p2, _ := statetest.BigState(t, "prod", 201, 3)
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
	pending, _ := statetest.BigState(t, "prod", 300, 3)
	var plan reconcile.Plan
	if err := json.Unmarshal(pending.Plan, &plan); err != nil {
		t.Fatal(err)
	}
	var kept []Unreported
	for i := range 4 {
		kept = append(kept, Unreported{ID: fmt.Sprint(i), Kind: "superseded", By: fmt.Sprintf("%040d", i),
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

// TestDropParts: once the index moved, the parts it named before are deleted
// and those it names kept; a part no index names is deleted only once it is
// orphanAge old by the API server's clock (serverNow, the time the server
// stamped on the index write), never by the replica's: a replica whose clock
// runs two hours ahead keeps a part created a second ago, and a part of
// another state is never touched.
func TestDropParts(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	part := func(name, of string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "stagehand",
			CreationTimestamp: metav1.NewTime(created),
			Labels:            map[string]string{LabelManagedBy: "stagehand", LabelComponent: componentPart, labelStateOf: of}}}
	}
	const name = "stagehand-state-prod"
	old := map[string]bool{name + "-pending-old-0": true}
	now := map[string]bool{name + "-pending-new-0": true}
	for _, tc := range []struct {
		name      string
		serverNow time.Time
		want      []string
	}{
		{"server time unknown", time.Time{}, []string{"other-state-part", name + "-pending-new-0", name + "-pending-orphan-0"}},
		{"a second old by the server, two hours by a fast replica", created.Add(time.Second),
			[]string{"other-state-part", name + "-pending-new-0", name + "-pending-orphan-0"}},
		{"orphanAge old by the server", created.Add(orphanPartAge), []string{"other-state-part", name + "-pending-new-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(part(name+"-pending-old-0", name), part(name+"-pending-new-0", name),
				part(name+"-pending-orphan-0", name), part("other-state-part", "stagehand-state-devel"))
			s := NewStore(client, "stagehand")
			if err := s.partStore.drop(ctx, name, partMove{old: old, now: now}, tc.serverNow); err != nil {
				t.Fatal(err)
			}
			list, err := client.CoreV1().ConfigMaps("stagehand").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, cm := range list.Items {
				kept = append(kept, cm.Name)
			}
			slices.Sort(kept)
			if diff := cmp.Diff(tc.want, kept); diff != "" {
				t.Errorf("parts kept (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPartNamesNameEveryPart: the parts a write keeps are those every index
// of the state names, outcomes kept for GitHub included: a part left out
// would be deleted as an orphan while still indexed, and every later read of
// the state would fail.
func TestPartNamesNameEveryPart(t *testing.T) {
	pending, st := statetest.BigState(t, "prod", 300, 3)
	var plan reconcile.Plan
	if err := json.Unmarshal(pending.Plan, &plan); err != nil {
		t.Fatal(err)
	}
	var kept []Unreported
	for i := range 4 {
		kept = append(kept, Unreported{ID: fmt.Sprint(i), Kind: "superseded", By: fmt.Sprintf("%040d", i),
			Proposal: approval.Proposal{Environment: "prod", Revision: plan.Revision, Plan: &plan}, Attempts: 1})
	}
	e, err := encodeState("stagehand-state-prod", &EnvState{Pending: pending, InFlight: &approval.InFlight{Revision: plan.Revision,
		PlanHash: plan.PlanHash, Changes: pending.Plan}, Status: st, Unreported: kept}, 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range e.parts {
		want[p.Name] = true
	}
	var split []string
	for k := range e.data {
		if strings.HasSuffix(k, suffixParts) {
			split = append(split, k)
		}
	}
	slices.Sort(split)
	if diff := cmp.Diff([]string{keyInFlight + suffixParts, keyPending + suffixParts, keyStatus + suffixParts, keyUnreported + suffixParts}, split); diff != "" {
		t.Fatalf("values split (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, partNames(&corev1.ConfigMap{Data: e.data, BinaryData: e.binary})); diff != "" {
		t.Errorf("parts named (-written +named):\n%s", diff)
	}
}
