package promote

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"go.yaml.in/yaml/v3"
)

// parser walks the YAML node tree so that every error carries a position.
type parser struct {
	file    string
	errs    ErrorList
	omitted int // problems past maxErrors
}

func (p *parser) errorf(n *yaml.Node, at, format string, a ...any) {
	if len(p.errs) >= maxErrors {
		p.omitted++
		return
	}
	e := Error{File: p.file, Path: at, Message: fmt.Sprintf(format, a...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

var (
	topKeys    = []string{"stages", "owners"}
	stageKeys  = []string{"name", "promoteFrom", "triggeredOn", "sequence", "autoMerge", "lockPath", "requires", "window", "acceptsBumps", "bumpClaims"}
	reqKeys    = []string{"healthy", "soak"}
	windowKeys = []string{"schedule", "duration"}
)

// Keys returns every key pipeline.yaml accepts as a path such as
// "stages[].requires.soak", in file order: what docs/reference/configuration.md must
// describe. A new key list (a nested mapping) is added to nested as well;
// a mapping of names (owners) has the placeholder <file> for its keys.
func Keys() []string {
	nested := map[string][]string{"stages[]": stageKeys, "stages[].requires": reqKeys, "stages[].window": windowKeys,
		"stages[].bumpClaims": bumpClaimsKeys,
		"stages[].sequence[]": taskKeys, "stages[].triggeredOn": triggerKeys, "stages[].triggeredOn.selector": selectKeys,
		"stages[].triggeredOn.selector.match": matchKeys, "owners": {"<file>"}, "owners.<file>": ownersKeys}
	var out []string
	var walk func(prefix string, keys []string)
	walk = func(prefix string, keys []string) {
		for _, k := range keys {
			path := join(prefix, k)
			out = append(out, path)
			if sub, ok := nested[path]; ok { // a mapping
				walk(path, sub)
			} else if sub, ok := nested[path+"[]"]; ok { // a list of mappings
				walk(path+"[]", sub)
			}
		}
	}
	walk("", topKeys)
	return out
}

func (p *parser) parse(data []byte) *Pipeline {
	pl := &Pipeline{File: p.file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.errs = append(p.errs, yamlError(p.file, err))
		return pl
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.errorf(nil, "", "empty file; want a mapping with a stages list")
		return pl
	}
	root := doc.Content[0]
	fields := p.mapping(root, "", topKeys)
	if fields == nil {
		return pl
	}
	stages, ok := fields["stages"]
	if !ok {
		p.errorf(root, "", "missing key stages")
		return pl
	}
	if stages.value.Kind != yaml.SequenceNode {
		p.errorf(stages.value, "stages", "want a list of stages, got %s", kindName(stages.value))
		return pl
	}
	if len(stages.value.Content) == 0 {
		p.errorf(stages.value, "stages", "want at least one stage")
	}
	if n := len(stages.value.Content); n > MaxStages {
		p.errorf(stages.value, "stages", "%d stages; at most %d are accepted", n, MaxStages)
		return pl
	}
	seen := map[string]int{} // name → index
	for i, n := range stages.value.Content {
		at := fmt.Sprintf("stages[%d]", i)
		s := p.stage(n, at)
		if s == nil {
			continue
		}
		if s.Name != "" {
			if j, dup := seen[s.Name]; dup {
				p.errorf(n, at+".name", "duplicate stage %q (also stages[%d], line %d)", s.Name, j, pl.Stages[indexOf(pl.Stages, s.Name)].Line)
			} else {
				seen[s.Name] = i
			}
		}
		if t := s.TriggeredOn; t != nil {
			p.checkTrigger(n, at, s, seen)
		}
		if s.PromoteFrom != "" {
			if s.PromoteFrom == s.Name {
				p.errorf(n, at+".promoteFrom", "stage %q cannot promote from itself", s.Name)
			} else if _, ok := seen[s.PromoteFrom]; !ok {
				p.errorf(n, at+".promoteFrom", "%q is not an earlier stage; want one of %s", s.PromoteFrom, quoteList(names(pl.Stages)))
			}
		} else if s.set["requires"] || s.Window != nil || s.AutoMerge {
			p.errorf(n, at, "requires, window and autoMerge need promoteFrom")
		}
		pl.Stages = append(pl.Stages, s.Stage)
	}
	if f, ok := fields["owners"]; ok {
		pl.Owners = p.owners(f.value, "owners")
	}
	return pl
}

type parsedStage struct {
	Stage
	set         map[string]bool
	triggerNode *yaml.Node
}

// checkTrigger checks s's triggeredOn against its promoteFrom and
// requires.healthy, and makes the trigger's stage its promoteFrom when
// promoteFrom is left out.
func (p *parser) checkTrigger(n *yaml.Node, at string, s *parsedStage, seen map[string]int) {
	t := s.TriggeredOn
	tat := at + ".triggeredOn"
	switch {
	case s.PromoteFrom == "":
		s.PromoteFrom = t.Stage
	case s.PromoteFrom != t.Stage:
		p.errorf(s.triggerNode, tat, "%q is triggered by stage %q, but promoteFrom is %q; they must name the same stage", t.Event(), t.Stage, s.PromoteFrom)
		return
	}
	if t.Stage == s.Name {
		return // reported as promoteFrom itself
	}
	if _, ok := seen[t.Stage]; !ok {
		p.errorf(s.triggerNode, tat, "%q: %q is not an earlier stage", t.Event(), t.Stage)
		s.PromoteFrom = "" // reported once
		return
	}
	if !s.Requires.Healthy {
		p.errorf(s.triggerNode, tat, "%q waits for stage %q's sequence to pass; it cannot go with requires.healthy: false", t.Event(), t.Stage)
	}
}

func (p *parser) stage(n *yaml.Node, at string) *parsedStage {
	fields := p.mapping(n, at, stageKeys)
	if fields == nil {
		return nil
	}
	s := &parsedStage{Stage: Stage{Line: n.Line}, set: map[string]bool{}}
	for k := range fields {
		s.set[k] = true
	}
	if f, ok := fields["name"]; ok {
		s.Name = p.str(f.value, at+".name")
		if s.Name != "" && !stageNameRE.MatchString(s.Name) {
			p.errorf(f.value, at+".name", "%q: want lowercase letters, digits and '-' (an environment directory name)", s.Name)
		}
	} else {
		p.errorf(n, at, "missing key name")
	}
	if f, ok := fields["promoteFrom"]; ok {
		s.PromoteFrom = p.str(f.value, at+".promoteFrom")
	}
	if f, ok := fields["triggeredOn"]; ok {
		s.TriggeredOn = p.trigger(f.value, at+".triggeredOn")
		s.triggerNode = f.value
	}
	if f, ok := fields["sequence"]; ok {
		s.Sequence = p.sequence(f.value, at+".sequence")
	}
	if f, ok := fields["autoMerge"]; ok {
		s.AutoMerge = p.boolean(f.value, at+".autoMerge")
	}
	if f, ok := fields["lockPath"]; ok {
		s.LockPath = p.str(f.value, at+".lockPath")
		if s.LockPath != "" && !lockPathRE.MatchString(s.LockPath) {
			p.errorf(f.value, at+".lockPath", "%q: want a lock path of lowercase letters, digits, '-' and '/'", s.LockPath)
		}
	}
	s.Requires.Healthy = true
	if f, ok := fields["requires"]; ok {
		rf := p.mapping(f.value, at+".requires", reqKeys)
		if h, ok := rf["healthy"]; ok {
			s.Requires.Healthy = p.boolean(h.value, at+".requires.healthy")
		}
		if d, ok := rf["soak"]; ok {
			s.Requires.Soak = p.duration(d.value, at+".requires.soak", false)
			if s.Requires.Soak > 0 && !s.Requires.Healthy {
				p.errorf(d.value, at+".requires.soak", "soak counts from the earlier stage's successful check; it needs healthy: true")
			}
		}
	}
	if f, ok := fields["window"]; ok {
		s.Window = p.window(f.value, at+".window")
	}
	if f, ok := fields["acceptsBumps"]; ok {
		s.AcceptsBumps = p.boolean(f.value, at+".acceptsBumps")
	}
	if f, ok := fields["bumpClaims"]; ok {
		s.BumpClaims = p.bumpClaims(f.value, at+".bumpClaims")
		if !s.AcceptsBumps {
			p.errorf(f.value, at+".bumpClaims", "bumpClaims restrict bumps, but the stage has no acceptsBumps: true")
		}
	}
	return s
}

func (p *parser) window(n *yaml.Node, at string) *Window {
	fields := p.mapping(n, at, windowKeys)
	if fields == nil {
		return nil
	}
	w := &Window{}
	if f, ok := fields["schedule"]; ok {
		w.Schedule = p.str(f.value, at+".schedule")
		if strings.Contains(w.Schedule, "@every") {
			p.errorf(f.value, at+".schedule", "%q: a window opens at calendar times; want a cron expression like \"0 9 * * 1-5\" or @daily, not @every", w.Schedule)
		} else if w.Schedule != "" {
			sched, err := cronParser.Parse(w.Schedule)
			if err != nil {
				p.errorf(f.value, at+".schedule", "%q: %v; want a cron expression like \"0 9 * * 1-5\" (optionally prefixed CRON_TZ=Zone)", w.Schedule, err)
			}
			w.sched = sched
		}
	} else {
		p.errorf(n, at, "missing key schedule")
	}
	if f, ok := fields["duration"]; ok {
		w.Duration = p.duration(f.value, at+".duration", true)
	} else {
		p.errorf(n, at, "missing key duration")
	}
	if w.sched == nil || w.Duration <= 0 {
		return &Window{Schedule: w.Schedule, Duration: w.Duration, sched: cron.ConstantDelaySchedule{Delay: time.Hour}}
	}
	return w
}

type field struct {
	key, value *yaml.Node
}

// mapping checks that n is a mapping with only known keys and no duplicates.
func (p *parser) mapping(n *yaml.Node, at string, known []string) map[string]field {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping, got %s", kindName(n))
		return nil
	}
	out := map[string]field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		kat := join(at, name)
		if !slices.Contains(known, name) {
			msg := fmt.Sprintf("unknown key %q", name)
			if s := manifest.Suggest(name, known); s != "" {
				msg += fmt.Sprintf("; did you mean %s?", s)
			} else {
				msg += fmt.Sprintf("; want one of %s", quoteList(known))
			}
			p.errorf(k, kat, "%s", msg)
			continue
		}
		if prev, dup := out[name]; dup {
			p.errorf(k, kat, "duplicate key %q (first at line %d)", name, prev.key.Line)
			continue
		}
		out[name] = field{key: k, value: v}
	}
	return out
}

func (p *parser) str(n *yaml.Node, at string) string {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errorf(n, at, "want a string, got %s", kindName(n))
		return ""
	}
	if n.Value == "" {
		p.errorf(n, at, "must not be empty")
	}
	return n.Value
}

func (p *parser) boolean(n *yaml.Node, at string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.errorf(n, at, "want true or false, got %s", kindName(n))
		return false
	}
	return n.Value == "true"
}

func (p *parser) duration(n *yaml.Node, at string, positive bool) time.Duration {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errorf(n, at, "want a duration such as 30m or 24h, got %s", kindName(n))
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		p.errorf(n, at, "%q: not a duration; want e.g. 30m, 2h30m or 24h", n.Value)
	case d < 0 || (positive && d == 0):
		p.errorf(n, at, "%q: want a positive duration", n.Value)
	}
	return d
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "boolean " + n.Value
		case "!!int", "!!float":
			return "number " + n.Value
		case "!!str":
			return fmt.Sprintf("string %q", n.Value)
		}
		return n.Tag + " " + n.Value
	}
	return "nothing"
}

// yamlError turns a yaml.v3 syntax error ("yaml: line 3: ...") into an Error.
func yamlError(file string, err error) Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := Error{File: file, Message: msg}
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		e.Line, e.Column = line, 1
		e.Message = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	return e
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func indexOf(stages []Stage, name string) int {
	for i, s := range stages {
		if s.Name == name {
			return i
		}
	}
	return -1
}

func names(stages []Stage) []string {
	out := make([]string, 0, len(stages))
	for _, s := range stages {
		if s.Name != "" {
			out = append(out, s.Name)
		}
	}
	return out
}

func quoteList(list []string) string {
	if len(list) == 0 {
		return "(none)"
	}
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
