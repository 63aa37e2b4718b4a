package promote

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSequence(t *testing.T) {
	in := `stages:
  - name: devel
    sequence:
      - deployment
      - name: test
        properties:
          kind: http
          http: {url: "http://checkout/healthz", expect: 200}
      - evaluation
      - release
  - name: prod
    triggeredOn:
      event: devel.delivery.finished
      selector: {match: {result: pass}}
    sequence: [approval, deployment]
  - name: dr
    triggeredOn: prod.delivery.finished
  - name: eu
    triggeredOn: {event: dr.delivery.finished, selector: {match: {result: warning}}}
    sequence: [approval, deployment, test, approval, release]
`
	got, err := Parse("pipeline.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	type stage struct {
		Name, PromoteFrom string
		Healthy           bool
		Tasks             []string
		Props             []string
		Trigger           *Trigger
	}
	var gotStages []stage
	for _, s := range got.Stages {
		st := stage{Name: s.Name, PromoteFrom: s.PromoteFrom, Healthy: s.Requires.Healthy, Trigger: s.TriggeredOn}
		for _, task := range s.SequenceTasks() {
			st.Tasks = append(st.Tasks, task.Name)
			st.Props = append(st.Props, string(task.Properties))
		}
		gotStages = append(gotStages, st)
	}
	want := []stage{
		{Name: "devel", Healthy: true, Tasks: []string{"deployment", "test", "evaluation", "release"},
			Props: []string{"", `{"http":{"expect":200,"url":"http://checkout/healthz"},"kind":"http"}`, "", ""}},
		{Name: "prod", PromoteFrom: "devel", Healthy: true, Tasks: []string{"approval", "deployment"}, Props: []string{"", ""},
			Trigger: &Trigger{Stage: "devel", Sequence: "delivery", Result: "pass"}},
		{Name: "dr", PromoteFrom: "prod", Healthy: true, Tasks: []string{"deployment"}, Props: []string{""},
			Trigger: &Trigger{Stage: "prod", Sequence: "delivery", Result: "pass"}},
		{Name: "eu", PromoteFrom: "dr", Healthy: true, Tasks: []string{"approval", "deployment", "test", "approval", "release"}, Props: []string{"", "", "", "", ""},
			Trigger: &Trigger{Stage: "dr", Sequence: "delivery", Result: "warning"}},
	}
	if diff := cmp.Diff(want, gotStages); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	test := got.Stages[0].Sequence[1]
	if test.Line != 5 || test.Column != 9 || test.Index != 1 {
		t.Errorf("test task at %d:%d index %d, want 5:9 index 1", test.Line, test.Column, test.Index)
	}
	var props map[string]any
	if err := json.Unmarshal(test.Properties, &props); err != nil {
		t.Errorf("properties are not JSON: %v", err)
	}
	if got.Stages[1].TriggeredOn.Event() != "devel.delivery.finished" {
		t.Errorf("Event() = %q", got.Stages[1].TriggeredOn.Event())
	}
	if !got.Stages[1].HasTask(TaskApproval) || got.Stages[0].HasTask(TaskApproval) {
		t.Errorf("HasTask(approval) wrong")
	}
	for _, tc := range []struct {
		stage        int
		result       string
		wantAccepted bool
	}{{1, ResultPass, true}, {1, ResultWarning, false}, {3, ResultWarning, true}, {3, ResultPass, true}, {3, ResultFail, false}} {
		st := got.Stages[tc.stage]
		if ok := st.TriggeredOn.Accepts(tc.result); ok != tc.wantAccepted {
			t.Errorf("stage %s: Accepts(%q) = %v, want %v", st.Name, tc.result, ok, tc.wantAccepted)
		}
	}
}

func TestParseSequenceErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{{
		name: "unknown, repeated and misplaced tasks",
		in: `stages:
  - name: a
    sequence: [test, deploy, deployment, approval, deployment, release, test]
  - name: b
    sequence: [approval, approval, deployment, test, approval, approval, release]
`,
		want: []string{
			`p.yaml:3:22: stages[0].sequence[1]: unknown task "deploy"; want one of "approval", "deployment", "test", "evaluation", "release"`,
			`p.yaml:3:52: stages[0].sequence[4]: task "deployment" appears twice (also stages[0].sequence[2]); only test and evaluation may repeat`,
			`p.yaml:3:16: stages[0].sequence[0]: task "test" before deployment has nothing to verify; put it after "deployment"`,
			`p.yaml:3:64: stages[0].sequence[5]: release marks the sequence done; it must be the last task`,
			`p.yaml:5:26: stages[1].sequence[1]: a second approval before deployment (also stages[1].sequence[0]); a sequence has at most one approval before deployment (it approves the plan) and one after it (it releases the deployed revision)`,
			`p.yaml:5:64: stages[1].sequence[5]: a second approval after deployment (also stages[1].sequence[4]); a sequence has at most one approval before deployment (it approves the plan) and one after it (it releases the deployed revision)`,
		},
	}, {
		name: "shapes",
		in: `stages:
  - name: a
    sequence: [{properties: {x: 1}}, [deployment], {name: deployment, properties: {strategy: blue}}, {name: test, properties: [1]}, {name: test, prop: 1}]
  - name: b
    sequence: deployment
  - name: c
    sequence: [release]
  - name: d
    sequence: []
`,
		want: []string{
			`p.yaml:3:16: stages[0].sequence[0]: missing key name`,
			`p.yaml:3:38: stages[0].sequence[1]: want a task name or a mapping with name and properties, got a list`,
			`p.yaml:3:83: stages[0].sequence[2].properties: task "deployment" takes no properties; only test and evaluation tasks do`,
			`p.yaml:3:127: stages[0].sequence[3].properties: want a mapping of the task's properties, got a list`,
			`p.yaml:3:146: stages[0].sequence[4].prop: unknown key "prop"; want one of "name", "properties"`,
			`p.yaml:5:15: stages[1].sequence: want a list of tasks such as [approval, deployment, test, release], got string "deployment"`,
			`p.yaml:7:15: stages[2].sequence: missing the task "deployment": a sequence deploys the revision once`,
			`p.yaml:9:15: stages[3].sequence: want at least the task "deployment"`,
		},
	}, {
		name: "triggers",
		in: `stages:
  - name: a
  - name: b
    triggeredOn: a.deploy.finished
  - name: c
    triggeredOn: a.delivery.started
  - name: d
    promoteFrom: b
    triggeredOn: a.delivery.finished
  - name: e
    triggeredOn: {event: z.delivery.finished, selector: {match: {result: fail}}}
  - name: f
    triggeredOn: a.delivery.finished
    requires: {healthy: false}
  - name: g
    triggeredOn: {selector: {}}
`,
		want: []string{
			`p.yaml:4:18: stages[1].triggeredOn: "a.deploy.finished": stage "a"'s sequence is called "delivery"; want a.delivery.finished`,
			`p.yaml:6:18: stages[2].triggeredOn: "a.delivery.started": want <stage>.<sequence>.finished, such as devel.delivery.finished`,
			`p.yaml:9:18: stages[3].triggeredOn: "a.delivery.finished" is triggered by stage "a", but promoteFrom is "b"; they must name the same stage`,
			`p.yaml:11:74: stages[4].triggeredOn.selector.match.result: "fail": a sequence that failed never promotes (its deploy failed, or was rolled back); want "pass" or "warning" (pass or warning)`,
			`p.yaml:11:18: stages[4].triggeredOn: "z.delivery.finished": "z" is not an earlier stage`,
			`p.yaml:13:18: stages[5].triggeredOn: "a.delivery.finished" waits for stage "a"'s sequence to pass; it cannot go with requires.healthy: false`,
			`p.yaml:16:18: stages[6].triggeredOn: missing key event`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.in))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse error = %v, want an ErrorList", err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
