package promote

import (
	"fmt"
	"strings"
)

// Error is one problem in a pipeline file, located by line and column (1-based,
// 0 when unknown) and by a path such as "stages[1].requires.soak".
type Error struct {
	File    string
	Line    int
	Column  int
	Path    string
	Message string
}

func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// ErrorList is every problem found in one pipeline file, in file order.
type ErrorList []Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}
