package manifest

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is one problem in a manifest file. Line and Column (1-based, columns
// count characters) are set for syntax and type errors and, where known, for
// semantic ones; Pointer is the JSON pointer (RFC 6901) of the offending value.
type Error struct {
	// File is the repo-relative path of the file, e.g.
	// "environments/devel/manifest.json".
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Error formats the problem as "file:line:col: pointer: message", leaving out
// the position when unknown and the pointer when empty.
func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Column))
	}
	b.WriteString(": ")
	if e.Pointer != "" {
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ErrorList is every problem found while resolving an environment, in the
// order found, capped at the configured maximum (50 by default); Omitted
// counts the problems left out.
type ErrorList struct {
	Errors  []Error `json:"errors"`
	Omitted int     `json:"omitted,omitempty"`
}

// Error joins the problems one per line.
func (l *ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	if l.Omitted > 0 {
		fmt.Fprintf(&b, "\n... and %d more problems", l.Omitted)
	}
	return b.String()
}

// Len returns the number of problems, counting the omitted ones.
func (l *ErrorList) Len() int { return len(l.Errors) + l.Omitted }

// collector gathers errors and warnings up to a cap.
type collector struct {
	max      int
	errs     []Error
	omitted  int
	warnings []Error
	seen     map[Error]struct{} // a file included twice reports its include errors once
}

func (c *collector) add(e Error) {
	if _, dup := c.seen[e]; dup {
		return
	}
	if c.seen == nil {
		c.seen = make(map[Error]struct{})
	}
	c.seen[e] = struct{}{}
	if len(c.errs) >= c.max {
		c.omitted++
		return
	}
	c.errs = append(c.errs, e)
}

func (c *collector) full() bool { return len(c.errs) >= c.max }

func (c *collector) warn(e Error) {
	if len(c.warnings) < c.max {
		c.warnings = append(c.warnings, e)
	}
}

func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return &ErrorList{Errors: c.errs, Omitted: c.omitted}
}
