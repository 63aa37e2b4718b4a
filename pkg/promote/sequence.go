package promote

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SequenceName is the name of a stage's delivery sequence, in its events
// (sh.stagehand.<stage>.delivery.started) and in triggeredOn.
const SequenceName = "delivery"

// The tasks a delivery sequence may hold (Keptn's reserved task names).
const (
	// TaskApproval waits for a person: the approval gate (check run, API,
	// CLI). Before deployment it approves the plan before it is applied;
	// after deployment (Keptn's [deployment, test, approval, release]) it
	// releases the deployed and verified revision: the sequence, and so
	// promotion, waits for it. At most one of each.
	TaskApproval = "approval"
	// TaskDeployment applies the plan and waits for the rollout. Required, once.
	TaskDeployment = "deployment"
	// TaskTest and TaskEvaluation verify the deployed revision; their
	// properties are passed to the reconciler's implementation of the task.
	TaskTest       = "test"
	TaskEvaluation = "evaluation"
	// TaskRelease marks the revision released; last when present.
	TaskRelease = "release"
)

// Task results and the result of a sequence (the worst of its tasks').
const (
	ResultPass    = "pass"
	ResultWarning = "warning"
	ResultFail    = "fail"
)

// Task is one step of a stage's sequence.
type Task struct {
	Name string
	// Properties are the task's properties as JSON (nil when none), passed
	// through to the implementation of the task.
	Properties json.RawMessage
	// Index is the task's position in the sequence; Line and Column where
	// it is in the file (0 for a default sequence).
	Index        int
	Line, Column int
}

// Trigger is a stage's triggeredOn: the earlier stage whose finished
// sequence, with an accepted result, lets versions move into this stage.
type Trigger struct {
	Stage    string
	Sequence string
	// Result is the worst result the finished sequence may have: pass, or
	// warning (pass or warning).
	Result string
}

// Accepts reports whether a sequence that finished with result lets
// versions move on: pass always, warning when the trigger accepts it.
func (t *Trigger) Accepts(result string) bool {
	if result == ResultPass {
		return true
	}
	return t != nil && t.Result == ResultWarning && result == ResultWarning
}

// Event is the trigger's event name: <stage>.<sequence>.finished.
func (t Trigger) Event() string { return t.Stage + "." + t.Sequence + ".finished" }

var (
	taskNames   = []string{TaskApproval, TaskDeployment, TaskTest, TaskEvaluation, TaskRelease}
	taskKeys    = []string{"name", "properties"}
	triggerKeys = []string{"event", "selector"}
	selectKeys  = []string{"match"}
	matchKeys   = []string{"result"}
)

// SequenceTasks returns the stage's sequence: the declared one, or else the
// default [deployment]. Whether a person approves before deployment when
// the sequence has no approval task is the environment's skipConfirmation.
func (s *Stage) SequenceTasks() []Task {
	if len(s.Sequence) > 0 {
		return s.Sequence
	}
	return []Task{{Name: TaskDeployment}}
}

// HasTask reports whether the stage's sequence holds a task called name.
func (s *Stage) HasTask(name string) bool {
	for _, t := range s.SequenceTasks() {
		if t.Name == name {
			return true
		}
	}
	return false
}

// sequence parses stages[i].sequence: a list whose items are a task name or
// a mapping {name, properties}.
func (p *parser) sequence(n *yaml.Node, at string) []Task {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, at, "want a list of tasks such as [approval, deployment, test, release], got %s", kindName(n))
		return nil
	}
	if len(n.Content) == 0 {
		p.errorf(n, at, "want at least the task %q", TaskDeployment)
		return nil
	}
	if len(n.Content) > MaxTasks {
		p.errorf(n, at, "%d tasks; at most %d are accepted", len(n.Content), MaxTasks)
		return nil
	}
	var tasks []Task
	first := map[string]int{} // task → first index
	for i, item := range n.Content {
		iat := fmt.Sprintf("%s[%d]", at, i)
		t := Task{Index: i, Line: item.Line, Column: item.Column}
		nameNode := item
		switch item.Kind {
		case yaml.ScalarNode:
			t.Name = p.str(item, iat)
		case yaml.MappingNode:
			fields := p.mapping(item, iat, taskKeys)
			f, ok := fields["name"]
			if !ok {
				p.errorf(item, iat, "missing key name")
				continue
			}
			nameNode = f.value
			t.Name = p.str(f.value, iat+".name")
			if pf, ok := fields["properties"]; ok {
				t.Properties = p.properties(pf.value, iat+".properties", t.Name)
			}
		default:
			p.errorf(item, iat, "want a task name or a mapping with name and properties, got %s", kindName(item))
			continue
		}
		if t.Name == "" {
			continue
		}
		if !slices.Contains(taskNames, t.Name) {
			p.errorf(nameNode, nameAt(item, iat), "unknown task %q; want one of %s", t.Name, quoteList(taskNames))
			continue
		}
		if j, dup := first[t.Name]; dup && t.Name != TaskTest && t.Name != TaskEvaluation && t.Name != TaskApproval {
			p.errorf(nameNode, nameAt(item, iat), "task %q appears twice (also %s[%d]); only test and evaluation may repeat", t.Name, at, j)
			continue
		}
		if _, ok := first[t.Name]; !ok {
			first[t.Name] = i
		}
		tasks = append(tasks, t)
	}
	p.checkOrder(n, at, tasks, first)
	return tasks
}

// checkOrder enforces [approval] → deployment → test/evaluation/[approval]
// → release, with at most one approval before and one after deployment.
func (p *parser) checkOrder(n *yaml.Node, at string, tasks []Task, first map[string]int) {
	dep, ok := first[TaskDeployment]
	if !ok {
		if len(tasks) > 0 {
			p.errorf(n, at, "missing the task %q: a sequence deploys the revision once", TaskDeployment)
		}
		return
	}
	approvals := map[bool]int{} // after deployment → index of the first approval
	for _, t := range tasks {
		tat := fmt.Sprintf("%s[%d]", at, t.Index)
		if t.Name == TaskApproval {
			after := t.Index > dep
			if j, dup := approvals[after]; dup {
				side := map[bool]string{false: "before", true: "after"}[after]
				p.errorf(n.Content[t.Index], tat, "a second approval %s deployment (also %s[%d]); a sequence has at most one approval before deployment (it approves the plan) and one after it (it releases the deployed revision)", side, at, j)
				continue
			}
			approvals[after] = t.Index
		}
		switch {
		case (t.Name == TaskTest || t.Name == TaskEvaluation) && t.Index < dep:
			p.errorf(n.Content[t.Index], tat, "task %q before deployment has nothing to verify; put it after %q", t.Name, TaskDeployment)
		case t.Name == TaskRelease && t.Index != len(n.Content)-1:
			p.errorf(n.Content[t.Index], tat, "release marks the sequence done; it must be the last task")
		}
	}
}

// properties converts a task's properties mapping to JSON.
func (p *parser) properties(n *yaml.Node, at, task string) json.RawMessage {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of the task's properties, got %s", kindName(n))
		return nil
	}
	if task != TaskTest && task != TaskEvaluation {
		p.errorf(n, at, "task %q takes no properties; only test and evaluation tasks do", task)
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		p.errorf(n, at, "%v", err)
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		p.errorf(n, at, "not representable as JSON (keys must be strings): %v", err)
		return nil
	}
	return data
}

// trigger parses stages[i].triggeredOn: "<stage>.delivery.finished" or
// {event: <stage>.delivery.finished, selector: {match: {result: pass}}}.
func (p *parser) trigger(n *yaml.Node, at string) *Trigger {
	t := &Trigger{Result: ResultPass}
	eventNode := n
	eat := at
	switch n.Kind {
	case yaml.ScalarNode:
	case yaml.MappingNode:
		fields := p.mapping(n, at, triggerKeys)
		f, ok := fields["event"]
		if !ok {
			p.errorf(n, at, "missing key event")
			return nil
		}
		eventNode, eat = f.value, at+".event"
		if sf, ok := fields["selector"]; ok {
			sel := p.mapping(sf.value, at+".selector", selectKeys)
			if mf, ok := sel["match"]; ok {
				m := p.mapping(mf.value, at+".selector.match", matchKeys)
				if rf, ok := m["result"]; ok {
					t.Result = p.str(rf.value, at+".selector.match.result")
					switch t.Result {
					case "", ResultPass, ResultWarning:
					case ResultFail:
						p.errorf(rf.value, at+".selector.match.result", "%q: a sequence that failed never promotes (its deploy failed, or was rolled back); want %q or %q (pass or warning)", t.Result, ResultPass, ResultWarning)
					default:
						p.errorf(rf.value, at+".selector.match.result", "%q: want %q or %q (pass or warning)", t.Result, ResultPass, ResultWarning)
					}
				}
			}
		}
	default:
		p.errorf(n, at, "want an event such as devel.%s.finished, got %s", SequenceName, kindName(n))
		return nil
	}
	ev := p.str(eventNode, eat)
	if ev == "" {
		return nil
	}
	parts := strings.Split(ev, ".")
	if len(parts) != 3 || parts[2] != "finished" || parts[0] == "" || parts[1] == "" {
		p.errorf(eventNode, eat, "%q: want <stage>.<sequence>.finished, such as devel.%s.finished", ev, SequenceName)
		return nil
	}
	t.Stage, t.Sequence = parts[0], parts[1]
	if t.Sequence != SequenceName {
		p.errorf(eventNode, eat, "%q: stage %q's sequence is called %q; want %s.%s.finished", ev, t.Stage, SequenceName, t.Stage, SequenceName)
		return nil
	}
	return t
}

func nameAt(item *yaml.Node, at string) string {
	if item.Kind == yaml.MappingNode {
		return at + ".name"
	}
	return at
}
