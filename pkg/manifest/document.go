package manifest

import (
	"bytes"
	"encoding/json"
	"strings"
)

// kv is an ordered object member for rendering.
type kv struct {
	k string
	v any
}

func serviceValue(s Service) []kv {
	obj := []kv{{"name", s.Name}}
	if s.Version != "" {
		obj = append(obj, kv{"version", s.Version})
	}
	if len(s.Containers) > 0 {
		var cs []any
		for _, c := range s.Containers {
			cs = append(cs, containerValue(s.Name, c))
		}
		obj = append(obj, kv{"containers", cs})
	}
	return obj
}

func containerValue(service string, c Container) []kv {
	var obj []kv
	if c.DockerName != "" && c.DockerName != service {
		obj = append(obj, kv{"dockerName", c.DockerName})
	}
	obj = append(obj, kv{"dockerTag", c.DockerTag})
	if c.DockerDigest != "" {
		obj = append(obj, kv{"dockerDigest", c.DockerDigest})
	}
	return obj
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// style is how the file writes JSON, learnt from its bytes.
type style struct {
	nl    string // "\n" or "\r\n"
	unit  string // one level of indentation
	colon string // between key and value, e.g. ": "
	comma string // after a comma on one line, e.g. " "
}

func (e *Editor) style() style {
	st := style{nl: "\n", unit: "  ", colon: ": ", comma: " "}
	if bytes.Contains(e.data, []byte("\r\n")) {
		st.nl = "\r\n"
	}
	if m := firstMember(e.root); m != nil {
		st.colon = string(e.data[m.keyEnd:m.val.start])
	}
	// The indentation unit is the smallest indentation in the file.
	unit := ""
	for _, line := range strings.Split(string(e.data), "\n") {
		ind := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if ind != "" && len(ind) < len(line) && (unit == "" || len(ind) < len(unit)) {
			unit = ind
		}
	}
	if unit != "" || bytes.Count(e.data, []byte("\n")) > 2 {
		st.unit = unit
	}
	if c, ok := e.commaSpace(e.root); ok {
		st.comma = c
	}
	return st
}

// commaSpace returns the whitespace after a comma in the first one-line list
// of two or more items.
func (e *Editor) commaSpace(n *node) (string, bool) {
	if n == nil {
		return "", false
	}
	if len(n.members) > 1 {
		if l := e.leading(n.members[1].keyStart); !strings.Contains(l, "\n") {
			return l, true
		}
	}
	if len(n.elems) > 1 {
		if l := e.leading(n.elems[1].start); !strings.Contains(l, "\n") {
			return l, true
		}
	}
	for _, m := range n.members {
		if c, ok := e.commaSpace(m.val); ok {
			return c, true
		}
	}
	for _, el := range n.elems {
		if c, ok := e.commaSpace(el); ok {
			return c, true
		}
	}
	return "", false
}

func firstMember(n *node) *member {
	if n == nil {
		return nil
	}
	for i := range n.members {
		return &n.members[i]
	}
	for _, c := range n.elems {
		if m := firstMember(c); m != nil {
			return m
		}
	}
	return nil
}

// render writes v in the file's style, over several lines when multi, with
// ind the indentation of the line v starts on.
func (st style) render(v any, ind string, multi bool) string {
	var b strings.Builder
	st.write(&b, v, ind, multi)
	return b.String()
}

func (st style) write(b *strings.Builder, v any, ind string, multi bool) {
	sep := func(i int) {
		if i > 0 {
			b.WriteByte(',')
		}
		if multi {
			b.WriteString(st.nl + ind + st.unit)
		} else if i > 0 {
			b.WriteString(st.comma)
		}
	}
	switch v := v.(type) {
	case string:
		b.WriteString(jsonString(v))
	case []kv:
		b.WriteByte('{')
		for i, m := range v {
			sep(i)
			b.WriteString(jsonString(m.k) + st.colon)
			st.write(b, m.v, ind+st.unit, multi)
		}
		if multi {
			b.WriteString(st.nl + ind)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, el := range v {
			sep(i)
			st.write(b, el, ind+st.unit, multi)
		}
		if multi {
			b.WriteString(st.nl + ind)
		}
		b.WriteByte(']')
	}
}

// indentAt returns the indentation of the line holding offset off.
func (e *Editor) indentAt(off int) string {
	start := bytes.LastIndexByte(e.data[:off], '\n') + 1
	end := start
	for end < len(e.data) && (e.data[end] == ' ' || e.data[end] == '\t') {
		end++
	}
	return string(e.data[start:end])
}

func (e *Editor) multiline(n *node) bool {
	return bytes.IndexByte(e.data[n.start:n.end], '\n') >= 0
}

// leading returns the whitespace right before offset off.
func (e *Editor) leading(off int) string {
	p := off
	for p > 0 && strings.IndexByte(" \t\r\n", e.data[p-1]) >= 0 {
		p--
	}
	return string(e.data[p:off])
}

// insertMember inserts "key": v after the member at index after of obj (or
// as the only member of an empty object), in the neighbours' style.
func (e *Editor) insertMember(obj *node, after int, key string, v any) error {
	st := e.style()
	if len(obj.members) == 0 || after < 0 {
		return e.fillEmpty(obj, jsonString(key)+st.colon, v, st)
	}
	ref := obj.members[after]
	lead := e.leading(ref.keyStart)
	multi := strings.Contains(lead, "\n")
	ind := ""
	if multi {
		ind = e.indentAt(ref.keyStart)
	}
	colon := string(e.data[ref.keyEnd:ref.val.start])
	text := "," + lead + jsonString(key) + colon + st.render(v, ind, multi)
	return e.splice(ref.val.end, ref.val.end, text)
}

// appendElem appends v to the array list, in the neighbours' style.
func (e *Editor) appendElem(list *node, v any) error {
	st := e.style()
	if len(list.elems) == 0 {
		return e.fillEmpty(list, "", v, st)
	}
	last := list.elems[len(list.elems)-1]
	lead := e.leading(last.start)
	if len(list.elems) == 1 && !strings.Contains(lead, "\n") {
		lead = st.comma // after '[', not after a comma
	}
	multi := strings.Contains(lead, "\n") || e.multiline(last)
	ind := ""
	if multi {
		ind = e.indentAt(last.start)
	}
	return e.splice(last.end, last.end, ","+lead+st.render(v, ind, multi))
}

// fillEmpty writes prefix+v as the only content of the empty object or array
// n, over several lines when the file has any.
func (e *Editor) fillEmpty(n *node, prefix string, v any, st style) error {
	if !bytes.Contains(e.data, []byte("\n")) {
		return e.splice(n.start+1, n.end-1, prefix+st.render(v, "", false))
	}
	ind := e.indentAt(n.start)
	text := st.nl + ind + st.unit + prefix + st.render(v, ind+st.unit, true) + st.nl + ind
	return e.splice(n.start+1, n.end-1, text)
}

// removeMember removes the member at index i of obj with its separator.
func (e *Editor) removeMember(obj *node, i int) error {
	spans := make([][2]int, len(obj.members))
	for j, m := range obj.members {
		spans[j] = [2]int{m.keyStart, m.val.end}
	}
	return e.removeSpan(obj, spans, i)
}

// removeElem removes the element at index i of list with its separator.
func (e *Editor) removeElem(list *node, i int) error {
	spans := make([][2]int, len(list.elems))
	for j, el := range list.elems {
		spans[j] = [2]int{el.start, el.end}
	}
	return e.removeSpan(list, spans, i)
}

func (e *Editor) removeSpan(n *node, spans [][2]int, i int) error {
	switch {
	case len(spans) == 1:
		return e.splice(n.start+1, n.end-1, "")
	case i > 0:
		return e.splice(spans[i-1][1], spans[i][1], "")
	default:
		return e.splice(spans[0][0], spans[1][0], "")
	}
}
