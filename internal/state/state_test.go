package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

func TestConfigMapName(t *testing.T) {
	tests := []struct{ env, want string }{
		{"prod", "stagehand-state-prod"},
		{"eu-west", "stagehand-state-eu-west"},
		{"Prod_EU", "stagehand-state-prod-eu-"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			got := ConfigMapName(tt.env)
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("ConfigMapName(%q) = %q, want prefix %q", tt.env, got, tt.want)
			}
			if len(got) > 63 {
				t.Errorf("ConfigMapName(%q) = %q is longer than 63", tt.env, got)
			}
		})
	}
	if ConfigMapName("Prod_EU") == ConfigMapName("prod-eu") {
		t.Errorf("distinct environments share a ConfigMap")
	}
}

// fullState has every record of an environment's state set, its pending
// plan (also kept unreported) of n changes.
func fullState(t testing.TB, n int) *EnvState {
	t.Helper()
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	plan := &reconcile.Plan{Environment: "prod", Revision: "r2", PlanHash: "sha256:p2"}
	for i := range n {
		svc := fmt.Sprintf("service-%02d", i)
		sum := sha256.Sum256([]byte(svc)) // a digest, which does not compress
		plan.Changes = append(plan.Changes, reconcile.Change{Service: svc, Target: "eu", Namespace: "apps", Kind: "Deployment",
			Name: svc, Container: "app", From: "registry.example.com/" + svc + ":1", To: "registry.example.com/" + svc + ":2@sha256:" + hex.EncodeToString(sum[:])})
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	entry := approval.Entry{ID: 7, Revision: "r1", PlanHash: "sha256:p1", Changes: json.RawMessage(`[]`), Approver: "github:alice",
		Result: approval.ResultSucceeded, Started: at, Finished: at.Add(time.Minute),
		Manifest: &approval.Manifest{Root: "environments/prod/manifest.json",
			Services: []manifest.Service{{Name: "web", Version: "1", Source: "environments/prod/manifest.json",
				Containers: []manifest.Container{{DockerName: "web", DockerTag: "1"}}}},
			Files: []approval.File{{Path: "environments/prod/manifest.json", Blob: strings.Repeat("a", 40)}}}}
	return &EnvState{
		Phase:    status.PhaseRollingBack,
		Pending:  &approval.Pending{Revision: "r2", PlanHash: "sha256:p2", Plan: planJSON, ProposedAt: at},
		InFlight: &approval.InFlight{Revision: "r1", PlanHash: "sha256:p1", Approver: "github:alice", Changes: json.RawMessage(`[]`), Started: at},
		Handovers: []Handover{{ID: "h1", Approve: false, PlanHash: "sha256:p2", Approver: "github:bob", Reason: "no", At: at},
			{ID: "h2", Approve: true, PlanHash: "sha256:p2", Approver: "github:carol", At: at}},
		Unreported: []Unreported{{ID: "u1", Kind: "superseded", By: "r2", Attempts: 2, LastError: "502",
			Proposal: approval.Proposal{Environment: "prod", Revision: "r2", Plan: plan}}},
		Sequence: &sequence.State{Stage: "prod", Sequence: "delivery", Revision: "r1", PlanHash: "sha256:p1", Status: "started",
			Tasks: []sequence.TaskState{}, Started: at},
		Pin:      &approval.Pin{PR: 12, URL: "https://github.example/acme/manifests/pull/12", Revision: "r0"},
		History:  []approval.Entry{entry},
		Status:   json.RawMessage(`{"revision":"r2"}`),
		LastID:   7,
		Rollback: &Rollback{Entry: entry, Cause: "rollout of web failed", Before: "r0", At: at},
		Failed:   &approval.RolledBack{Revision: "r1", PlanHash: "sha256:p1", Cause: "rollout of web failed", EntryID: 7, At: at},
		BreakGlass: []approval.BreakGlass{{PlanHash: "sha256:p2", Revision: "r2", By: "github:alice", Reason: "INC-42", At: at, Applied: at},
			{PlanHash: "sha256:p1", Revision: "r1", By: "token:oncall", Reason: "payments outage", At: at}},
	}
}

// decodeEncoded reads e back as a Store would, its parts from e itself.
func decodeEncoded(t testing.TB, e *encoded) (*EnvState, error) {
	t.Helper()
	cm := &corev1.ConfigMap{Data: e.data, BinaryData: e.binary}
	return decodeState(context.Background(), cm, &partSource{get: func(_ context.Context, name string) (*corev1.ConfigMap, error) {
		for _, p := range e.parts {
			if p.Name == name {
				return p, nil
			}
		}
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}})
}

// TestEncodeStateRoundTrip: every record of a state is read back as written,
// whether it is kept plain, compressed or split into parts.
func TestEncodeStateRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes int
		// unreported keeps the plan unreported too.
		unreported bool
		budget     int
		// wantKeys are keys of data or binaryData the layout must use.
		wantKeys []string
	}{
		{"plain", 40, true, maxStateBytes, []string{keyPending, keyInFlight, keyHandovers, keyHandover, keyUnreported, keySequence,
			keyPin, keyHistory, keyStatus, keyLastID, keyRollback, keyFailed, keyPhase, keyBreakGlass}},
		{"compressed", 40, true, 8 << 10, []string{keyPending + suffixGzip, keyUnreported + suffixGzip, keyHistory}},
		{"split", 2000, false, 64 << 10, []string{keyPending + suffixParts, keyHistory}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, in := fullState(t, tc.changes), fullState(t, tc.changes)
			if !tc.unreported {
				want.Unreported, in.Unreported = nil, nil
			}
			e, err := encodeState("stagehand-state-prod", in, tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			if e.size() > tc.budget {
				t.Errorf("encoded %d bytes, more than the budget of %d", e.size(), tc.budget)
			}
			for _, k := range tc.wantKeys {
				_, d := e.data[k]
				_, b := e.binary[k]
				if !d && !b {
					t.Errorf("no %s among data %v and binaryData %v", k, mapKeys(e.data), mapKeys(e.binary))
				}
			}
			got, err := decodeEncoded(t, e)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state read back (-want +got):\n%s", diff)
			}
		})
	}
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestHandoverSlot: the newest decision of the queue is mirrored into the
// single slot of replicas older than the queue, and read back once; a
// decision an older replica wrote into the slot joins the queue.
func TestHandoverSlot(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	a := Handover{ID: "a", Approve: true, PlanHash: "sha256:p", Approver: "github:alice", At: at}
	b := Handover{ID: "b", PlanHash: "sha256:p", Approver: "github:bob", Reason: "no", At: at}
	old := Handover{Approve: true, PlanHash: "sha256:p", Approver: "carol", At: at}
	js := func(v any) string {
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	e, err := encodeState("s", &EnvState{Handovers: []Handover{a, b}}, maxStateBytes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(js(b), e.data[keyHandover]); diff != "" {
		t.Errorf("older replicas' slot (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		data map[string]string
		want []Handover
	}{
		{"the queue and its newest in the slot", e.data, []Handover{a, b}},
		{"an older replica's decision alone", map[string]string{keyHandover: js(old)}, []Handover{old}},
		{"an older replica's decision over the slot", map[string]string{keyHandovers: js([]Handover{a, b}), keyHandover: js(old)}, []Handover{a, b, old}},
		{"nothing", map[string]string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeState(context.Background(), &corev1.ConfigMap{Data: tc.data}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Handovers); diff != "" {
				t.Errorf("handovers read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandoverSame: two decisions are one by ID when both have one, else
// (one written by an older replica) by every field, times compared as
// instants.
// TestAddBreakGlass: a break-glass is kept once per plan, newest first, within MaxBreakGlass.
func TestAddBreakGlass(t *testing.T) {
	var st EnvState
	for i := range MaxBreakGlass + 3 {
		if !st.AddBreakGlass(approval.BreakGlass{PlanHash: fmt.Sprintf("sha256:p%d", i), Revision: "r", By: "github:alice", Reason: "x"}) {
			t.Fatalf("break-glass %d not added", i)
		}
	}
	if st.AddBreakGlass(approval.BreakGlass{PlanHash: fmt.Sprintf("sha256:p%d", MaxBreakGlass+2), Revision: "r", By: "github:mallory", Reason: "again"}) {
		t.Error("a second break-glass for the same plan was added")
	}
	if len(st.BreakGlass) != MaxBreakGlass || st.BreakGlass[0].PlanHash != fmt.Sprintf("sha256:p%d", MaxBreakGlass+2) || st.BreakGlass[0].By != "github:alice" {
		t.Errorf("kept %d, the newest %+v; want %d, the newest p%d by github:alice", len(st.BreakGlass), st.BreakGlass[0], MaxBreakGlass, MaxBreakGlass+2)
	}
	if b := st.BreakGlassFor("sha256:p5", "other"); b != nil {
		t.Errorf("BreakGlassFor another revision = %+v, want none: it is for one plan at one revision", b)
	}
}

func TestHandoverSame(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	a := Handover{ID: "a", Approve: true, PlanHash: "sha256:p", Approver: "alice", At: at}
	for _, tc := range []struct {
		name string
		b    Handover
		want bool
	}{
		{"same ID, other fields", Handover{ID: "a", PlanHash: "sha256:q"}, true},
		{"other ID, same fields", Handover{ID: "b", Approve: true, PlanHash: "sha256:p", Approver: "alice", At: at}, false},
		{"no ID, same fields in another zone", Handover{Approve: true, PlanHash: "sha256:p", Approver: "alice", At: at.Local()}, true},
		{"no ID, another reason", Handover{Approve: true, PlanHash: "sha256:p", Approver: "alice", Reason: "x", At: at}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Same(tc.b); got != tc.want {
				t.Errorf("Same = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEnvStateRecord: entries are numbered after the last one ever recorded
// (also when the history was trimmed, or the numbering was kept only in the
// newest entry by an older replica), newest first, at most limit kept.
func TestEnvStateRecord(t *testing.T) {
	ids := func(h []approval.Entry) []int64 {
		var out []int64
		for _, e := range h {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		st      EnvState
		limit   int
		wantID  int64
		wantIDs []int64
	}{
		{"first", EnvState{}, 3, 1, []int64{1}},
		{"after the newest", EnvState{History: []approval.Entry{{ID: 2}, {ID: 1}}, LastID: 2}, 3, 3, []int64{3, 2, 1}},
		{"the oldest dropped", EnvState{History: []approval.Entry{{ID: 3}, {ID: 2}, {ID: 1}}, LastID: 3}, 3, 4, []int64{4, 3, 2}},
		{"after entries trimmed away", EnvState{History: []approval.Entry{{ID: 5}}, LastID: 9}, 3, 10, []int64{10, 5}},
		{"no lastId (an older replica)", EnvState{History: []approval.Entry{{ID: 4}}}, 3, 5, []int64{5, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			id := st.Record(approval.Entry{Revision: "new"}, tc.limit)
			if id != tc.wantID || st.LastID != tc.wantID || st.History[0].Revision != "new" {
				t.Errorf("Record = %d (lastId %d, newest %q), want %d", id, st.LastID, st.History[0].Revision, tc.wantID)
			}
			if diff := cmp.Diff(tc.wantIDs, ids(st.History)); diff != "" {
				t.Errorf("history IDs (-want +got):\n%s", diff)
			}
		})
	}
}
