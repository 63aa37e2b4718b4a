package sequence

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

func TestWorst(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"", "", "pass"}, {"pass", "", "pass"}, {"pass", "warning", "warning"}, {"warning", "pass", "warning"},
		{"warning", "fail", "fail"}, {"fail", "warning", "fail"}, {"", "fail", "fail"},
	} {
		t.Run(tc.a+"-"+tc.b, func(t *testing.T) {
			if got := Worst(tc.a, tc.b); got != tc.want {
				t.Errorf("Worst(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestSpaces(t *testing.T) {
	tasks := []promote.Task{{Name: "deployment"}, {Name: "test", Properties: json.RawMessage(`{"suite":"smoke","n":1}`)},
		{Name: "test", Properties: json.RawMessage(`{"suite":"load"}`)}, {Name: "release"}}
	s := New(Delivery{Stage: "devel", Revision: "abc", PlanHash: "sha256:x"}, tasks, time.Unix(0, 0))
	s.Tasks[1].Outputs = json.RawMessage(`{"n":2,"passed":true}`)
	s.Tasks[2].Outputs = json.RawMessage(`[1,2]`) // not an object: kept under "outputs"
	got := map[string]string{}
	for k, v := range s.Spaces(2) {
		got[k] = string(v)
	}
	want := map[string]string{"deployment": `{}`, "test": `{"n":2,"outputs":[1,2],"passed":true,"suite":"load"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spaces(2) (-want +got):\n%s", diff)
	}
	if n := len(s.Spaces(0)); n != 1 {
		t.Errorf("Spaces(0) has %d spaces, want 1", n)
	}
	if s.Next() != 0 || s.Index("release") != 3 || s.Index("approval") != -1 || s.Done() {
		t.Errorf("Next %d, Index(release) %d, Index(approval) %d, Done %v", s.Next(), s.Index("release"), s.Index("approval"), s.Done())
	}
	for i := range s.Tasks {
		s.Tasks[i].Status, s.Tasks[i].Result = StatusFinished, "pass"
	}
	s.Tasks[2].Result = "warning"
	if s.Next() != 4 || s.Outcome() != "warning" {
		t.Errorf("Next %d, Outcome %q; want 4, warning", s.Next(), s.Outcome())
	}
}

// TestDataJSON: the reserved spaces sit beside the run's fields and never
// replace one.
func TestDataJSON(t *testing.T) {
	d := Data{Stage: "devel", Sequence: "delivery", Environment: "devel", Revision: "abc", Result: "pass", Status: "succeeded",
		Versions: map[string]string{"web": "1.0.0"},
		Tasks:    map[string]json.RawMessage{"test": json.RawMessage(`{"suite":"smoke"}`), "stage": json.RawMessage(`{"evil":true}`)}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"stage": "devel", "sequence": "delivery", "environment": "devel", "revision": "abc", "result": "pass",
		"status": "succeeded", "versions": map[string]any{"web": "1.0.0"}, "test": map[string]any{"suite": "smoke"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

func TestApprovals(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tasks        []string
		pre, release int
	}{
		{"none", []string{"deployment", "test", "release"}, -1, -1},
		{"before", []string{"approval", "deployment", "release"}, 0, -1},
		{"after", []string{"deployment", "test", "approval", "release"}, -1, 2},
		{"both", []string{"approval", "deployment", "approval", "release"}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tasks []promote.Task
			for _, n := range tc.tasks {
				tasks = append(tasks, promote.Task{Name: n})
			}
			s := New(Delivery{Stage: "devel", Revision: "abc", PlanHash: "sha256:x"}, tasks, time.Unix(0, 0))
			if s.PreApproval() != tc.pre || s.ReleaseApproval() != tc.release {
				t.Errorf("PreApproval %d, ReleaseApproval %d; want %d, %d", s.PreApproval(), s.ReleaseApproval(), tc.pre, tc.release)
			}
			if s.AwaitingRelease() {
				t.Errorf("AwaitingRelease before the task started")
			}
			if tc.release >= 0 {
				s.Tasks[tc.release].Status = StatusStarted
				if !s.AwaitingRelease() {
					t.Errorf("not AwaitingRelease with the release approval started")
				}
				s.Status = StatusAborted
				if s.AwaitingRelease() {
					t.Errorf("AwaitingRelease once the run was aborted")
				}
			}
		})
	}
}
