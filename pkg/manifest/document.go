package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// document is one manifest file's bytes and their parse tree: the text
// primitives an Editor's edits are made of (splice, insert, append,
// remove) and the formatting they keep (style, indentation, commas).
type document struct {
	file  string // repo-relative, for errors
	data  []byte
	root  *node
	dirty bool // some edit changed data
}

// reparse reads the tree of d's bytes again.
func (d *document) reparse() error {
	n, err := parseTree(d.data)
	if err != nil {
		return fmt.Errorf("editing %s: %w", d.file, err)
	}
	d.root = n
	return nil
}

// splice replaces data[start:end] with text and re-reads the tree.
func (d *document) splice(start, end int, text string) error {
	if string(d.data[start:end]) == text {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(d.data) + len(text))
	b.Write(d.data[:start])
	b.WriteString(text)
	b.Write(d.data[end:])
	d.data = b.Bytes()
	d.dirty = true
	return d.reparse()
}

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
	colon string // between key and value, d.g. ": "
	comma string // after a comma on one line, d.g. " "
}

func (d *document) style() style {
	st := style{nl: "\n", unit: "  ", colon: ": ", comma: " "}
	if bytes.Contains(d.data, []byte("\r\n")) {
		st.nl = "\r\n"
	}
	if m := firstMember(d.root); m != nil {
		st.colon = string(d.data[m.keyEnd:m.val.start])
	}
	// The indentation unit is the smallest indentation in the file.
	unit := ""
	for _, line := range strings.Split(string(d.data), "\n") {
		ind := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if ind != "" && len(ind) < len(line) && (unit == "" || len(ind) < len(unit)) {
			unit = ind
		}
	}
	if unit != "" || bytes.Count(d.data, []byte("\n")) > 2 {
		st.unit = unit
	}
	if c, ok := d.commaSpace(d.root); ok {
		st.comma = c
	}
	return st
}

// commaSpace returns the whitespace after a comma in the first one-line list
// of two or more items.
func (d *document) commaSpace(n *node) (string, bool) {
	if n == nil {
		return "", false
	}
	if len(n.members) > 1 {
		if l := d.leading(n.members[1].keyStart); !strings.Contains(l, "\n") {
			return l, true
		}
	}
	if len(n.elems) > 1 {
		if l := d.leading(n.elems[1].start); !strings.Contains(l, "\n") {
			return l, true
		}
	}
	for _, m := range n.members {
		if c, ok := d.commaSpace(m.val); ok {
			return c, true
		}
	}
	for _, el := range n.elems {
		if c, ok := d.commaSpace(el); ok {
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
func (d *document) indentAt(off int) string {
	start := bytes.LastIndexByte(d.data[:off], '\n') + 1
	end := start
	for end < len(d.data) && (d.data[end] == ' ' || d.data[end] == '\t') {
		end++
	}
	return string(d.data[start:end])
}

func (d *document) multiline(n *node) bool {
	return bytes.IndexByte(d.data[n.start:n.end], '\n') >= 0
}

// leading returns the whitespace right before offset off.
func (d *document) leading(off int) string {
	p := off
	for p > 0 && strings.IndexByte(" \t\r\n", d.data[p-1]) >= 0 {
		p--
	}
	return string(d.data[p:off])
}

// insertMember inserts "key": v after the member at index after of obj (or
// as the only member of an empty object), in the neighbours' style.
func (d *document) insertMember(obj *node, after int, key string, v any) error {
	st := d.style()
	if len(obj.members) == 0 || after < 0 {
		return d.fillEmpty(obj, jsonString(key)+st.colon, v, st)
	}
	ref := obj.members[after]
	lead := d.leading(ref.keyStart)
	multi := strings.Contains(lead, "\n")
	ind := ""
	if multi {
		ind = d.indentAt(ref.keyStart)
	}
	colon := string(d.data[ref.keyEnd:ref.val.start])
	text := "," + lead + jsonString(key) + colon + st.render(v, ind, multi)
	return d.splice(ref.val.end, ref.val.end, text)
}

// appendElem appends v to the array list, in the neighbours' style.
func (d *document) appendElem(list *node, v any) error {
	st := d.style()
	if len(list.elems) == 0 {
		return d.fillEmpty(list, "", v, st)
	}
	last := list.elems[len(list.elems)-1]
	lead := d.leading(last.start)
	if len(list.elems) == 1 && !strings.Contains(lead, "\n") {
		lead = st.comma // after '[', not after a comma
	}
	multi := strings.Contains(lead, "\n") || d.multiline(last)
	ind := ""
	if multi {
		ind = d.indentAt(last.start)
	}
	return d.splice(last.end, last.end, ","+lead+st.render(v, ind, multi))
}

// fillEmpty writes prefix+v as the only content of the empty object or array
// n, over several lines when the file has any.
func (d *document) fillEmpty(n *node, prefix string, v any, st style) error {
	if !bytes.Contains(d.data, []byte("\n")) {
		return d.splice(n.start+1, n.end-1, prefix+st.render(v, "", false))
	}
	ind := d.indentAt(n.start)
	text := st.nl + ind + st.unit + prefix + st.render(v, ind+st.unit, true) + st.nl + ind
	return d.splice(n.start+1, n.end-1, text)
}

// removeMember removes the member at index i of obj with its separator.
func (d *document) removeMember(obj *node, i int) error {
	spans := make([][2]int, len(obj.members))
	for j, m := range obj.members {
		spans[j] = [2]int{m.keyStart, m.val.end}
	}
	return d.removeSpan(obj, spans, i)
}

// removeElem removes the element at index i of list with its separator.
func (d *document) removeElem(list *node, i int) error {
	spans := make([][2]int, len(list.elems))
	for j, el := range list.elems {
		spans[j] = [2]int{el.start, el.end}
	}
	return d.removeSpan(list, spans, i)
}

func (d *document) removeSpan(n *node, spans [][2]int, i int) error {
	switch {
	case len(spans) == 1:
		return d.splice(n.start+1, n.end-1, "")
	case i > 0:
		return d.splice(spans[i-1][1], spans[i][1], "")
	default:
		return d.splice(spans[0][0], spans[1][0], "")
	}
}
