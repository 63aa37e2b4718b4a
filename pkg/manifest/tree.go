package manifest

import "fmt"

// node is a JSON value with its byte range, for the editor. Objects keep
// their members in file order.
type node struct {
	kind       byte // '{', '[', '"' or 'v' for numbers, booleans and null
	start, end int  // value bytes are data[start:end]
	str        string
	members    []member
	elems      []*node
}

type member struct {
	key              string
	keyStart, keyEnd int // the quoted key is data[keyStart:keyEnd]
	val              *node
}

// get returns the value of the member named key, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// index returns the position of the member named key, or -1.
func (n *node) index(key string) int {
	for i, m := range n.members {
		if m.key == key {
			return i
		}
	}
	return -1
}

// parseTree parses data into a node tree.
func parseTree(data []byte) (n *node, err error) {
	s := &scanner{data: data}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			n, err = nil, fmt.Errorf("syntax error at byte %d: %s", se.off, se.msg)
		}
	}()
	s.ws()
	n = s.value()
	s.ws()
	if !s.eof() {
		s.fail(s.i, "unexpected %s after the end of the value", s.describeHere())
	}
	return n, nil
}

func (s *scanner) value() *node {
	c := s.peek("a value")
	n := &node{start: s.i}
	switch c {
	case '{':
		n.kind = '{'
		if !s.open('}') {
			for {
				s.ws()
				ks := s.i
				if s.peek("a string key") != '"' {
					s.fail(s.i, "expected a string key, found %s", s.describeHere())
				}
				k := string(s.strBytes())
				ke := s.i
				s.expect(':', "':' after object key")
				s.ws()
				n.members = append(n.members, member{key: k, keyStart: ks, keyEnd: ke, val: s.value()})
				if !s.next('}') {
					break
				}
			}
			s.nest--
		}
	case '[':
		n.kind = '['
		if !s.open(']') {
			for {
				s.ws()
				n.elems = append(n.elems, s.value())
				if !s.next(']') {
					break
				}
			}
			s.nest--
		}
	case '"':
		n.kind = '"'
		n.str = string(s.strBytes())
	default:
		n.kind = 'v'
		s.skip()
	}
	n.end = s.i
	return n
}
