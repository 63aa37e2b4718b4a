package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Errors of the editor, checked with errors.Is.
var (
	// ErrNotFound means the service or container to edit is not in the file.
	ErrNotFound = errors.New("not found")
	// ErrExists means the service or container to add is already in the file.
	ErrExists = errors.New("already exists")
)

// Editor changes one manifest file in place, keeping its formatting: key
// order, indentation, line endings and the trailing newline. Only the bytes
// of the values that change are touched, so a tag bump changes one line.
type Editor struct {
	file  string
	data  []byte
	root  *node
	dirty bool
}

// Edit opens a manifest file's bytes for editing. name is the repo-relative
// name used in errors. The file must be a valid manifest (problems come back
// as an *ErrorList); of the options only AllowUnknownKeys matters.
func Edit(name string, data []byte, opts ...Option) (*Editor, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("editing %s: %w", name, err)
	}
	f := &file{name: name, data: data}
	c := collector{max: o.maxErrors}
	parse(f, &c, o.allowUnknownKeys)
	f.checkDuplicates(&c)
	if err := c.err(); err != nil {
		return nil, err
	}
	e := &Editor{file: name, data: append([]byte(nil), data...)}
	if err := e.reparse(); err != nil {
		return nil, err
	}
	return e, nil
}

// Bytes returns the edited file.
func (e *Editor) Bytes() []byte { return append([]byte(nil), e.data...) }

// Changed reports whether any edit changed the bytes.
func (e *Editor) Changed() bool { return e.dirty }

func (e *Editor) reparse() error {
	n, err := parseTree(e.data)
	if err != nil {
		return fmt.Errorf("editing %s: %w", e.file, err)
	}
	e.root = n
	return nil
}

// splice replaces data[start:end] with text and re-reads the tree.
func (e *Editor) splice(start, end int, text string) error {
	if string(e.data[start:end]) == text {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(e.data) + len(text))
	b.Write(e.data[:start])
	b.WriteString(text)
	b.Write(e.data[end:])
	e.data = b.Bytes()
	e.dirty = true
	return e.reparse()
}

// service returns the object of the service named name.
func (e *Editor) service(name string) (*node, int, error) {
	list := e.root.get("services")
	if list != nil && list.kind == '[' {
		for i, s := range list.elems {
			if n := s.get("name"); n != nil && n.kind == '"' && n.str == name {
				return s, i, nil
			}
		}
	}
	return nil, -1, fmt.Errorf("editing %s: service %q: %w", e.file, name, ErrNotFound)
}

// container returns the object of the service's container whose dockerName
// (defaulted to the service name) is dockerName; "" means the service name.
func (e *Editor) container(service, dockerName string) (svc, ctr *node, idx int, err error) {
	svc, _, err = e.service(service)
	if err != nil {
		return nil, nil, -1, err
	}
	if dockerName == "" {
		dockerName = service
	}
	if list := svc.get("containers"); list != nil && list.kind == '[' {
		for i, c := range list.elems {
			name := service
			if n := c.get("dockerName"); n != nil && n.kind == '"' && n.str != "" {
				name = n.str
			}
			if name == dockerName {
				return svc, c, i, nil
			}
		}
	}
	return nil, nil, -1, fmt.Errorf("editing %s: container %q of service %q: %w", e.file, dockerName, service, ErrNotFound)
}

// Services returns the service names in the file, in order.
func (e *Editor) Services() []string {
	var names []string
	if list := e.root.get("services"); list != nil {
		for _, s := range list.elems {
			if n := s.get("name"); n != nil && n.kind == '"' {
				names = append(names, n.str)
			}
		}
	}
	return names
}

// Container returns the current values of a service's container, with
// DockerName defaulted; dockerName "" means the service name.
func (e *Editor) Container(service, dockerName string) (Container, error) {
	_, c, _, err := e.container(service, dockerName)
	if err != nil {
		return Container{}, err
	}
	out := Container{DockerName: service}
	if n := c.get("dockerName"); n != nil && n.str != "" {
		out.DockerName = n.str
	}
	if n := c.get("dockerTag"); n != nil {
		out.DockerTag = n.str
	}
	if n := c.get("dockerDigest"); n != nil {
		out.DockerDigest = n.str
	}
	return out, nil
}

// SetImage sets the tag and digest of a service's container (dockerName ""
// means the service name). A digest is added after dockerTag when the key is
// absent; an empty digest removes the key.
func (e *Editor) SetImage(service, dockerName, tag, digest string) error {
	if msg := checkTag(tag); msg != "" {
		return fmt.Errorf("editing %s: %s", e.file, msg)
	}
	if digest != "" {
		if msg := checkDigest(digest); msg != "" {
			return fmt.Errorf("editing %s: %s", e.file, msg)
		}
	}
	_, c, _, err := e.container(service, dockerName)
	if err != nil {
		return err
	}
	t := c.get("dockerTag")
	if err := e.splice(t.start, t.end, jsonString(tag)); err != nil {
		return err
	}
	_, c, _, _ = e.container(service, dockerName)
	i := c.index("dockerDigest")
	switch {
	case digest == "" && i >= 0:
		return e.removeMember(c, i)
	case digest == "":
		return nil
	case i >= 0:
		v := c.members[i].val
		return e.splice(v.start, v.end, jsonString(digest))
	}
	return e.insertMember(c, c.index("dockerTag"), "dockerDigest", digest)
}

// AddService appends a service at the end of the file's services list
// (creating the list when absent).
func (e *Editor) AddService(s Service) error {
	if msg := checkName(s.Name); msg != "" {
		return fmt.Errorf("editing %s: %s", e.file, msg)
	}
	if err := checkNew(s); err != nil {
		return fmt.Errorf("editing %s: service %q: %w", e.file, s.Name, err)
	}
	if _, _, err := e.service(s.Name); err == nil {
		return fmt.Errorf("editing %s: service %q: %w", e.file, s.Name, ErrExists)
	}
	list := e.root.get("services")
	if list == nil {
		return e.insertMember(e.root, len(e.root.members)-1, "services", []any{serviceValue(s)})
	}
	return e.appendElem(list, serviceValue(s))
}

// RemoveService removes a service entry from the file.
func (e *Editor) RemoveService(name string) error {
	_, i, err := e.service(name)
	if err != nil {
		return err
	}
	return e.removeElem(e.root.get("services"), i)
}

// AddContainer appends a container to a service (creating its containers
// list when absent). An empty DockerName, or one equal to the service name,
// is left out of the file.
func (e *Editor) AddContainer(service string, c Container) error {
	svc, _, err := e.service(service)
	if err != nil {
		return err
	}
	if err := checkNew(Service{Name: service, Containers: []Container{c}}); err != nil {
		return fmt.Errorf("editing %s: service %q: %w", e.file, service, err)
	}
	if _, _, _, err := e.container(service, c.DockerName); err == nil {
		return fmt.Errorf("editing %s: container %q of service %q: %w", e.file, c.DockerName, service, ErrExists)
	}
	list := svc.get("containers")
	if list == nil {
		return e.insertMember(svc, len(svc.members)-1, "containers", []any{containerValue(service, c)})
	}
	return e.appendElem(list, containerValue(service, c))
}

// RemoveContainer removes a service's container (dockerName "" means the
// service name).
func (e *Editor) RemoveContainer(service, dockerName string) error {
	svc, _, i, err := e.container(service, dockerName)
	if err != nil {
		return err
	}
	return e.removeElem(svc.get("containers"), i)
}

func checkNew(s Service) error {
	if s.Version != "" {
		if msg := checkSemver(s.Version); msg != "" {
			return errors.New(msg)
		}
	}
	for _, c := range s.Containers {
		msg := checkTag(c.DockerTag)
		if msg == "" && c.DockerName != "" {
			msg = checkDockerName(c.DockerName)
		}
		if msg == "" && c.DockerDigest != "" {
			msg = checkDigest(c.DockerDigest)
		}
		if msg != "" {
			return errors.New(msg)
		}
	}
	return nil
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
