package manifest

// posStride is how many bytes apart the position marks of a file are: a
// position costs one lookup and a scan of at most this many bytes, whatever
// the file's layout (a one-line file is as cheap as a pretty-printed one).
const posStride = 256

// posMark is the 1-based line and character column at a multiple of
// posStride.
type posMark struct{ line, col int }

// pos converts a byte offset into a 1-based line and character column
// (characters are counted as UTF-8 sequences: bytes that do not continue
// one). The marks are built in one pass over the file on first use.
func (f *file) pos(off int) (line, col int) {
	if f.marks == nil {
		f.marks = positionMarks(f.data)
	}
	off = max(0, min(off, len(f.data)))
	k := off / posStride
	m := f.marks[k]
	line, col = m.line, m.col
	for _, c := range f.data[k*posStride : off] {
		switch {
		case c == '\n':
			line, col = line+1, 1
		case c&0xC0 != 0x80:
			col++
		}
	}
	return line, col
}

// positionMarks records the position at every multiple of posStride up to
// and including len(data).
func positionMarks(data []byte) []posMark {
	marks := make([]posMark, len(data)/posStride+1)
	line, col := 1, 1
	for i, c := range data {
		if i%posStride == 0 {
			marks[i/posStride] = posMark{line, col}
		}
		switch {
		case c == '\n':
			line, col = line+1, 1
		case c&0xC0 != 0x80:
			col++
		}
	}
	if len(data)%posStride == 0 {
		marks[len(data)/posStride] = posMark{line, col}
	}
	return marks
}

func (f *file) entryPos(e *entry) (line, col int) {
	if e.line == 0 {
		e.line, e.col = f.pos(e.off)
	}
	return e.line, e.col
}
