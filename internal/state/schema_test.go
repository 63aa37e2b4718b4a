package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// goldenSums are the fixtures of testdata/golden as released builds wrote
// them. They are never regenerated: a fixture that changes no longer proves
// that this build reads what an older one wrote.
var goldenSums = map[string]string{
	"v0-compressed.configmaps.json": "2bbd710a5da528963d33ff4d924cef0668a5cbd5429551ddbc5052c5b3e56385",
	"v0-plain.configmaps.json":      "955d3e824b339a3fa4d9a36b14df2ae96498fadec2b7498fb863e523a2e1a139",
	"v0-plain.state.json":           "5a3eb3c8c43c7348891ca7d4902e097ec37b3fbd1dfd5727847ce7b7b7fdd874",
	"v0-split.configmaps.json":      "850683d55e800d38b30d9a485df450b8c44738ea2f31f7bcc8cde9d536d9dff6",
	"v0-split.state.json":           "138bf02bd3018c75c661787a16cc305351a0d378d2f2c976ce752c64c9fb58b4",
	"v1-plain.configmaps.json":      "855955ae6a7f19200497e96664ac71d95ffad82740e1506db7bdc39723f1e774",
	"v1-split.configmaps.json":      "3ee23cbc1371d58a4b4db55b846593039eedaa1e9e2c363b52354c6381f753b8",
}

// TestGoldenFixturesUnchanged: every fixture is there, as written, and none
// was added without its sum.
func TestGoldenFixturesUnchanged(t *testing.T) {
	entries, err := os.ReadDir("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata/golden", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got[e.Name()] = hex.EncodeToString(sum[:])
	}
	if diff := cmp.Diff(goldenSums, got); diff != "" {
		t.Errorf("golden state fixtures changed (-released +now); they are never regenerated:\n%s", diff)
	}
}

// loadGolden puts the ConfigMaps of a fixture into a cluster.
func loadGolden(t *testing.T, file string) *fake.Clientset {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/golden", file))
	if err != nil {
		t.Fatal(err)
	}
	var cms []corev1.ConfigMap
	if err := json.Unmarshal(b, &cms); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	for i := range cms {
		if _, err := client.CoreV1().ConfigMaps(cms[i].Namespace).Create(context.Background(), &cms[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return client
}

// TestReadsGoldenState: this build reads the state every released schema
// wrote (plain, compressed, split into parts) as it was written, and writes
// it back without losing anything, stamped with its own schema.
func TestReadsGoldenState(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ fixture, want string }{
		{"v0-plain.configmaps.json", "v0-plain.state.json"},
		{"v0-compressed.configmaps.json", "v0-plain.state.json"},
		{"v0-split.configmaps.json", "v0-split.state.json"},
		{"v1-plain.configmaps.json", "v0-plain.state.json"},
		{"v1-split.configmaps.json", "v0-split.state.json"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata/golden", tc.want))
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			client := loadGolden(t, tc.fixture)
			s := NewStore(client, "stagehand", WithMaxBytes(16<<10))
			got, err := s.Load(ctx, "prod")
			if err != nil {
				t.Fatal(err)
			}
			// Written before phases were kept: the phase is the records'.
			if got.Phase != DerivePhase(got) || got.Phase == "" {
				t.Errorf("phase read = %q, want the records' %q", got.Phase, DerivePhase(got))
			}
			if diff := cmp.Diff(want, asJSON(t, withoutPhase(got))); diff != "" {
				t.Fatalf("state read (-written +read):\n%s", diff)
			}
			// Written back by this build: the same state, this schema.
			if err := s.Update(ctx, "prod", func(*EnvState) {}); err != nil {
				t.Fatal(err)
			}
			if got, err = s.Load(ctx, "prod"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, asJSON(t, withoutPhase(got))); diff != "" {
				t.Errorf("state read after this build wrote it (-written +read):\n%s", diff)
			}
			cm, err := client.CoreV1().ConfigMaps("stagehand").Get(ctx, ConfigMapName("prod"), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := cm.Data[keySchema], `{"version":1,"oldestReader":0}`; got != want {
				t.Errorf("%s = %s, want %s", keySchema, got, want)
			}
		})
	}
}

// TestNewerSchemaRefused: a state written by a build whose schema this one
// must not read (its oldest reader is newer) is refused by Load, Update,
// Record and Claim (leaderElection.perEnvironment's start of a term) with an
// error naming both versions, and none of them writes anything: not the
// state, not a part, not the claim's annotation.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	newer := NewStore(client, "stagehand", WithMaxBytes(16<<10))
	newer.schema = schema{Version: 2, OldestReader: 2}
	if err := newer.Update(ctx, "prod", func(st *EnvState) { *st = *fullState(t, 300) }); err != nil {
		t.Fatal(err)
	}
	before, err := client.CoreV1().ConfigMaps("stagehand").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	older := NewStore(client, "stagehand", WithMaxBytes(16<<10))
	_, loadErr := older.Load(ctx, "prod")
	mutated := false
	updateErr := older.Update(ctx, "prod", func(st *EnvState) { mutated, st.Pending = true, nil })
	_, recordErr := older.Record(ctx, "prod", approval.Entry{PlanHash: "sha256:p2", Result: approval.ResultSucceeded})
	_, claimErr := older.Claim(ctx, "prod", FenceToken(7, "older"))
	for name, err := range map[string]error{"Load": loadErr, "Update": updateErr, "Record": recordErr, "Claim": claimErr} {
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %v, want a SchemaError", name, err)
		}
		if diff := cmp.Diff(SchemaError{ConfigMap: "stagehand/stagehand-state-prod", Found: 2, OldestReader: 2, Build: 1}, *se); diff != "" {
			t.Errorf("%s: SchemaError (-want +got):\n%s", name, diff)
		}
		for _, s := range []string{"schema version 2", "schema version 1", "stagehand-state-prod"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", name, err, s)
			}
		}
	}
	if mutated {
		t.Error("Update let the state be changed")
	}
	after, err := client.CoreV1().ConfigMaps("stagehand").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Items, after.Items); diff != "" {
		t.Errorf("the older build wrote to the newer state (-before +after):\n%s", diff)
	}
}

// TestSchemaMalformed: a schema.json that is not one is refused, not read
// as version 0.
func TestSchemaMalformed(t *testing.T) {
	for _, raw := range []string{`{"version":`, `{"version":1,"oldestReader":2}`, `{"version":-1,"oldestReader":-1}`, `"1"`} {
		t.Run(raw, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stagehand", Name: "stagehand-state-prod"},
				Data: map[string]string{keySchema: raw}}
			client := fake.NewClientset(cm)
			_, err := NewStore(client, "stagehand").Load(context.Background(), "prod")
			if err == nil || !strings.Contains(err.Error(), keySchema) {
				t.Errorf("Load: %v, want an error naming %s", err, keySchema)
			}
		})
	}
}

// TestRollingUpgrade: an older replica beside a newer one whose schema it
// may read (a newer schema that only adds keys) reads what the newer wrote
// as it was written, and its writes keep every key the newer wrote that it
// does not know (plain, compressed, split into parts, their parts) and the
// newer schema; the newer reads the older's writes.
func TestRollingUpgrade(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	newer := NewStore(client, "stagehand", WithMaxBytes(16<<10))
	newer.schema = schema{Version: 2, OldestReader: 1}
	older := NewStore(client, "stagehand", WithMaxBytes(16<<10))
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

	full := fullState(t, 40)
	if err := newer.Update(ctx, "prod", func(st *EnvState) { *st = *full }); err != nil {
		t.Fatal(err)
	}
	// What the newer build writes that this one does not know: a record of
	// its own in each layout.
	cms := client.CoreV1().ConfigMaps("stagehand")
	cm, err := cms.Get(ctx, ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzipBytes([]byte(`{"window":"weekdays"}`))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(z)
	part := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stagehand", Name: cm.Name + "-audit-0",
		Labels: map[string]string{LabelManagedBy: "stagehand", LabelComponent: componentPart, labelStateOf: cm.Name}},
		BinaryData: map[string][]byte{"part": z}}
	if _, err := cms.Create(ctx, part, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	idx, err := json.Marshal(partIndex{SHA256: hex.EncodeToString(sum[:]), Size: len(z), Parts: []string{part.Name}})
	if err != nil {
		t.Fatal(err)
	}
	newKeys := map[string]string{"deploywindows.json": `{"weekdays":true}`, "audit.json.parts": string(idx)}
	for k, v := range newKeys {
		cm.Data[k] = v
	}
	if cm.BinaryData == nil {
		cm.BinaryData = map[string][]byte{}
	}
	cm.BinaryData["windows.json.gz"] = z
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The older reads the newer's state as written.
	got, err := older.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fullState(t, 40), got); diff != "" {
		t.Fatalf("older read the newer's state (-written +read):\n%s", diff)
	}
	// The older writes: a new plan, a recorded apply, a cleared in-flight.
	if err := older.SetPending(ctx, "prod", &approval.Pending{Revision: "r3", PlanHash: "sha256:p3", Plan: json.RawMessage(`{}`), ProposedAt: at}); err != nil {
		t.Fatal(err)
	}
	if _, err := older.Record(ctx, "prod", approval.Entry{Revision: "r1", PlanHash: "sha256:p1", Changes: json.RawMessage(`[]`),
		Approver: "github:alice", Result: approval.ResultSucceeded, Started: at, Finished: at}); err != nil {
		t.Fatal(err)
	}
	cm, err = cms.Get(ctx, ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range newKeys {
		if cm.Data[k] != v {
			t.Errorf("after the older wrote, %s = %q, want %q as the newer wrote it", k, cm.Data[k], v)
		}
	}
	if string(cm.BinaryData["windows.json.gz"]) != string(z) {
		t.Error("after the older wrote, windows.json.gz is not as the newer wrote it")
	}
	if got, want := cm.Data[keySchema], `{"version":2,"oldestReader":1}`; got != want {
		t.Errorf("after the older wrote, %s = %s, want the newer's %s", keySchema, got, want)
	}
	if _, err := cms.Get(ctx, part.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the part of the newer's split key: %v", err)
	}

	// The newer reads the older's writes.
	got, err = newer.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if got.Pending == nil || got.Pending.PlanHash != "sha256:p3" {
		t.Errorf("newer read pending %+v, want the older's sha256:p3", got.Pending)
	}
	if got.InFlight != nil {
		t.Errorf("newer read in-flight %+v, want none: the older recorded its apply", got.InFlight)
	}
	if len(got.History) != 2 || got.History[0].ID != 8 || got.History[1].ID != 7 {
		t.Errorf("newer read history IDs %v, want [8 7]", historyIDs(got.History))
	}
}

func historyIDs(h []approval.Entry) []int64 {
	ids := make([]int64, len(h))
	for i, e := range h {
		ids[i] = e.ID
	}
	return ids
}

// asJSON is st as JSON values, to compare with a fixture's whatever the
// spacing of its raw messages.
func asJSON(t *testing.T, st *EnvState) any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// withoutPhase is st without its phase, which the golden fixtures, written
// before phases were kept, do not hold.
func withoutPhase(st *EnvState) *EnvState {
	cp := *st
	cp.Phase = ""
	return &cp
}

// TestStampedSchema: a build stamped by the linker (schemaStamp, a test's
// knob) writes the stamped schema as its own oldest reader; an empty stamp
// is this source's schema; a stamp that is not a number above it is refused
// (the build panics at start rather than claim an older schema).
func TestStampedSchema(t *testing.T) {
	for _, c := range []struct {
		stamp   string
		want    schema
		wantErr bool
	}{
		{stamp: "", want: schema{Version: SchemaVersion, OldestReader: schemaOldestReader}},
		{stamp: "2", want: schema{Version: 2, OldestReader: 2}},
		{stamp: "17", want: schema{Version: 17, OldestReader: 17}},
		{stamp: "1", wantErr: true},
		{stamp: "0", wantErr: true},
		{stamp: "-3", wantErr: true},
		{stamp: "2.0", wantErr: true},
		{stamp: " 2", wantErr: true},
		{stamp: "99999999999999999999999", wantErr: true},
	} {
		t.Run(c.stamp, func(t *testing.T) {
			got, err := stamped(c.stamp)
			if (err != nil) != c.wantErr {
				t.Fatalf("stamped(%q) = %v, %v; want an error: %v", c.stamp, got, err, c.wantErr)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("stamped(%q) (-want +got):\n%s", c.stamp, diff)
			}
		})
	}
	if current != (schema{Version: SchemaVersion, OldestReader: schemaOldestReader}) {
		t.Errorf("this unstamped test build writes %+v, want schema %d", current, SchemaVersion)
	}
}
