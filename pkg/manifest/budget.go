package manifest

import (
	"fmt"
	"io/fs"
	"strings"
)

// budget is the work one resolution has done, checked against the limits
// in options.
type budget struct {
	includes int   // include sites visited, the root manifest included
	services int   // service entries visited, once per include site
	bytes    int64 // bytes read, each distinct file once
}

// halted reports whether resolution must stop: a budget was crossed or ctx
// ended (recorded in r.stopped).
func (r *resolver) halted() bool {
	if r.over || r.stopped != nil {
		return true
	}
	if err := r.ctx.Err(); err != nil {
		r.stopped = err
		return true
	}
	return false
}

// overBudget reports that reading name, included from from at inc, crossed
// a limit (msg says which), naming the include chain that led there, and
// stops the resolution.
func (r *resolver) overBudget(from *file, inc include, name, msg string) {
	r.over = true
	chain := strings.Join(append(append([]string{}, r.stack...), name), " → ")
	if from == nil {
		r.c.add(Error{File: name, Message: "the environment's manifest " + msg})
		return
	}
	r.siteErr(from, inc, fmt.Sprintf("include %s %s; include chain: %s", quote(inc.path), msg, chain))
}

// fileKind names a non-regular file mode for errors.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return fmt.Sprintf("a special file (mode %v)", m)
}
