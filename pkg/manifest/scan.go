package manifest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting bounds how deeply arrays and objects may nest in a manifest, so
// that hostile input cannot exhaust the stack.
const maxNesting = 512

// syntaxError aborts the parse of one file; the decoder recovers it and
// reports it at its offset.
type syntaxError struct {
	off int
	msg string
}

// file is one manifest file as read and parsed.
type file struct {
	name     string // repo-relative path
	data     []byte
	marks    []posMark // line and column every posStride bytes, built on first use
	includes []include
	services []entry
	hasSkip  bool
	skip     bool
	skipOff  int
	broken   bool // a syntax error stopped the parse; includes and services are incomplete
	warned   bool // skipConfirmation-in-include warning already given
}

// include is one entry of a file's includes list.
type include struct {
	path string
	off  int
	idx  int
}

// entry is one service entry of a file.
type entry struct {
	svc     Service
	off     int // offset of the service object
	nameOff int // offset of the name value
	idx     int // index in the file's services list
	line    int // position of off, computed on first use
	col     int
}

// seg is one step of a JSON pointer.
type seg struct {
	key string
	idx int // -1 for a key
}

// scanner is the low-level JSON reader shared by the typed decoder.
type scanner struct {
	data []byte
	i    int
	nest int
}

func (s *scanner) fail(off int, format string, a ...any) {
	panic(syntaxError{off: off, msg: fmt.Sprintf(format, a...)})
}

func (s *scanner) at(i int) byte        { return s.data[i] }
func (s *scanner) eof() bool            { return s.i >= len(s.data) }
func (s *scanner) describeHere() string { return describe(s.data, s.i) }

// pointerPath is where the decoder is in a file: a JSON pointer's steps.
type pointerPath []seg

func (p *pointerPath) push(key string) { *p = append(*p, seg{key: key, idx: -1}) }
func (p *pointerPath) pushIdx(i int)   { *p = append(*p, seg{idx: i}) }
func (p *pointerPath) pop()            { *p = (*p)[:len(*p)-1] }

// String is the JSON pointer ("/services/0/name"; "" at the top).
func (p pointerPath) String() string { return pointerOf(p) }

func pointerOf(stack []seg) string {
	if len(stack) == 0 {
		return ""
	}
	var b strings.Builder
	for _, sg := range stack {
		b.WriteByte('/')
		if sg.idx >= 0 {
			b.WriteString(strconv.Itoa(sg.idx))
			continue
		}
		b.WriteString(clipKey(escapePointer(sg.key)))
	}
	return b.String()
}

// clipKey shortens a pointer segment over 64 bytes (an absurd key) so that
// errors stay small; such a pointer is for reading, not for following.
func clipKey(k string) string {
	if len(k) <= 64 {
		return k
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(k[cut]) {
		cut--
	}
	return k[:cut] + "…"
}

func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\n', '\t', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the byte at the cursor, failing at the end of the input.
func (s *scanner) peek(what string) byte {
	if s.i >= len(s.data) {
		s.fail(s.i, "unexpected end of file, expected %s", what)
	}
	return s.data[s.i]
}

// expect consumes c after optional whitespace.
func (s *scanner) expect(c byte, what string) {
	s.ws()
	if got := s.peek(what); got != c {
		s.fail(s.i, "expected %s, found %s", what, describe(s.data, s.i))
	}
	s.i++
}

// next consumes the separator after an object member or array element and
// reports whether another one follows. close is '}' or ']'.
func (s *scanner) next(close byte) bool {
	s.ws()
	if s.i >= len(s.data) {
		s.fail(s.i, "unexpected end of file, expected ',' or '%c'", close)
	}
	switch s.data[s.i] {
	case ',':
		s.i++
		s.ws()
		if s.i < len(s.data) && s.data[s.i] == close {
			s.fail(s.i, "trailing comma before '%c'", close)
		}
		return true
	case close:
		s.i++
		return false
	}
	s.fail(s.i, "expected ',' or '%c', found %s", close, describe(s.data, s.i))
	return false
}

// open consumes '{' or '[' and reports whether the container is empty.
func (s *scanner) open(close byte) (empty bool) {
	s.nest++
	if s.nest > maxNesting {
		s.fail(s.i, "nesting deeper than %d levels", maxNesting)
	}
	s.i++
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == close {
		s.i++
		s.nest--
		return true
	}
	return false
}

// key reads an object key and the colon after it. The returned bytes alias
// the input unless the key holds escapes.
func (s *scanner) key() []byte {
	s.ws()
	if c := s.peek("a string key"); c != '"' {
		s.fail(s.i, "expected a string key, found %s", describe(s.data, s.i))
	}
	k := s.strBytes()
	s.expect(':', "':' after object key")
	s.ws()
	s.peek("a value")
	return k
}

// str reads a string value.
func (s *scanner) str() string {
	start := s.i + 1
	for i := start; i < len(s.data); i++ {
		c := s.data[i]
		if c == '"' {
			s.i = i + 1
			return string(s.data[start:i])
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return string(s.strBytes())
		}
	}
	s.fail(s.i, "unterminated string")
	return ""
}

// strBytes reads a string token, decoding escapes and checking UTF-8. The
// result aliases the input when the string has no escapes.
func (s *scanner) strBytes() []byte {
	open := s.i
	start := s.i + 1
	var buf []byte // non-nil once an escape was seen
	i := start
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			s.i = i + 1
			if buf != nil {
				return buf
			}
			return s.data[start:i]
		case c == '\\':
			if buf == nil {
				buf = append(make([]byte, 0, i-start+16), s.data[start:i]...)
			}
			i = s.escape(i, &buf)
			continue
		case c < 0x20:
			s.fail(i, "control character %U in string; escape it", rune(c))
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s.data[i:])
			if r == utf8.RuneError && n <= 1 {
				s.fail(i, "invalid UTF-8 in string")
			}
			if buf != nil {
				buf = append(buf, s.data[i:i+n]...)
			}
			i += n
			continue
		}
		if buf != nil {
			buf = append(buf, c)
		}
		i++
	}
	s.fail(open, "unterminated string")
	return nil
}

// escape decodes the escape sequence at i into buf and returns the offset
// after it.
func (s *scanner) escape(i int, buf *[]byte) int {
	if i+1 >= len(s.data) {
		s.fail(i, "unterminated string")
	}
	switch c := s.data[i+1]; c {
	case '"', '\\', '/':
		*buf = append(*buf, c)
	case 'b':
		*buf = append(*buf, '\b')
	case 'f':
		*buf = append(*buf, '\f')
	case 'n':
		*buf = append(*buf, '\n')
	case 'r':
		*buf = append(*buf, '\r')
	case 't':
		*buf = append(*buf, '\t')
	case 'u':
		r, ok := hex4(s.data, i+2)
		if !ok {
			s.fail(i, "invalid \\u escape in string")
		}
		n := i + 6
		if utf16.IsSurrogate(r) {
			r2, ok2 := rune(0), false
			if n+1 < len(s.data) && s.data[n] == '\\' && s.data[n+1] == 'u' {
				r2, ok2 = hex4(s.data, n+2)
			}
			if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
				r = dec
				n += 6
			} else {
				r = utf8.RuneError
			}
		}
		*buf = utf8.AppendRune(*buf, r)
		return n
	default:
		s.fail(i, "invalid escape '\\%c' in string", c)
	}
	return i + 2
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skip reads and discards any JSON value, checking its syntax.
func (s *scanner) skip() {
	switch c := s.peek("a value"); {
	case c == '{':
		if s.open('}') {
			return
		}
		for {
			s.key()
			s.skip()
			if !s.next('}') {
				break
			}
		}
		s.nest--
	case c == '[':
		if s.open(']') {
			return
		}
		for {
			s.ws()
			s.skip()
			if !s.next(']') {
				break
			}
		}
		s.nest--
	case c == '"':
		s.strBytes()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		s.number()
	default:
		s.fail(s.i, "expected a value, found %s", describe(s.data, s.i))
	}
}

// boolean reads true or false at the cursor.
func (s *scanner) boolean() bool {
	if s.data[s.i] == 't' {
		s.literal("true")
		return true
	}
	s.literal("false")
	return false
}

func (s *scanner) literal(lit string) {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		s.fail(s.i, "invalid literal, expected %s", lit)
	}
	s.i += len(lit)
}

func (s *scanner) number() {
	start := s.i
	i := s.i
	if s.data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s.data) && '0' <= s.data[i] && s.data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s.data) && s.data[i] == '0' {
		i++
	} else if digits() == 0 {
		s.fail(start, "invalid number")
	}
	if i < len(s.data) && s.data[i] == '.' {
		i++
		if digits() == 0 {
			s.fail(start, "invalid number")
		}
	}
	if i < len(s.data) && (s.data[i] == 'e' || s.data[i] == 'E') {
		i++
		if i < len(s.data) && (s.data[i] == '+' || s.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.fail(start, "invalid number")
		}
	}
	s.i = i
}

// describe names the token at off for messages: its kind and, for scalars,
// its text.
func describe(data []byte, off int) string {
	if off >= len(data) {
		return "end of file"
	}
	switch c := data[off]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		end := off + 1
		for end < len(data) && data[end] != '"' && data[end] != '\n' && end-off < 64 {
			if data[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(data) {
			end = len(data) - 1
		}
		return "string " + clip(string(data[off:end+1]))
	case c == 't' || c == 'f' || c == 'n' || c == '-' || ('0' <= c && c <= '9'):
		end := off
		for end < len(data) && end-off < 32 && strings.IndexByte(",]}: \t\r\n", data[end]) < 0 {
			end++
		}
		tok := string(data[off:end])
		switch tok {
		case "true", "false":
			return "boolean " + tok
		case "null":
			return "null"
		}
		if c == 't' || c == 'f' || c == 'n' {
			return strconv.Quote(tok)
		}
		return "number " + tok
	case c == '/':
		return "'/' (comments are not allowed in JSON)"
	case c == '\'':
		return "'\\'' (JSON strings take double quotes)"
	default:
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Sprintf("byte 0x%02x, which is not UTF-8", c)
		}
		return strconv.QuoteRune(r)
	}
}

func clip(s string) string {
	if len(s) > 66 {
		return s[:60] + "…"
	}
	return s
}
