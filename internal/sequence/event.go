package sequence

import (
	"encoding/json"
	"maps"
	"time"
)

// Event kinds: the end of an event's type.
const (
	KindTriggered = "triggered"
	KindStarted   = "started"
	KindFinished  = "finished"
)

// Keptn's statuses of a finished event.
const (
	EventSucceeded = "succeeded"
	EventErrored   = "errored"
	EventAborted   = "aborted"
)

// Event is one step of a run: the sequence started or finished (Task ""),
// or a task triggered, started or finished.
type Event struct {
	Environment string
	// Name is the CloudEvents type without its prefix:
	// <stage>.<sequence>.started|finished or <task>.triggered|started|finished.
	Name string
	Kind string
	Task string
	Time time.Time
	Data Data
}

// Data is an event's data, in the shape of Keptn's shipyard events: the
// run, the result and status once finished, and the reserved space of each
// task so far (its properties merged with its outputs), by task name.
type Data struct {
	Stage       string `json:"stage"`
	Sequence    string `json:"sequence"`
	Environment string `json:"environment"`
	Revision    string `json:"revision"`
	PlanHash    string `json:"planHash,omitempty"`
	// Result is pass, warning or fail; Status succeeded, errored or aborted
	// (finished events only).
	Result   string            `json:"result,omitempty"`
	Status   string            `json:"status,omitempty"`
	Message  string            `json:"message,omitempty"`
	Approver string            `json:"approver,omitempty"`
	Versions map[string]string `json:"versions"`
	// Tasks are the reserved spaces; MarshalJSON writes each as data.<task>.
	Tasks map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the reserved spaces beside the other fields, as
// data.<task> (a space never replaces a field of the run).
func (d Data) MarshalJSON() ([]byte, error) {
	type plain Data
	b, err := json.Marshal(plain(d))
	if err != nil {
		return nil, err
	}
	if len(d.Tasks) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range d.Tasks {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// Space is a task's reserved space: properties merged with outputs (an
// output replaces a property of the same name); "{}" when both are empty.
// Non-object values are kept under "properties" and "outputs".
func Space(properties, outputs json.RawMessage) json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, part := range []struct {
		name string
		raw  json.RawMessage
	}{{"properties", properties}, {"outputs", outputs}} {
		if len(part.raw) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(part.raw, &obj); err == nil && obj != nil {
			maps.Copy(out, obj)
		} else {
			out[part.name] = part.raw
		}
	}
	b, err := json.Marshal(out)
	if err != nil { // raw messages that were valid JSON: cannot happen
		return json.RawMessage("{}")
	}
	return b
}

// Spaces returns the reserved space of each task of s up to and including
// index last (a repeated task's later spaces are merged over its earlier ones).
func (s *State) Spaces(last int) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for i, t := range s.Tasks {
		if i > last {
			break
		}
		space := Space(t.Properties, t.Outputs)
		if prev, ok := out[t.Name]; ok {
			space = Space(prev, space)
		}
		out[t.Name] = space
	}
	return out
}
