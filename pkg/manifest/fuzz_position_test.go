package manifest

import (
	"testing"
)

// FuzzPosition checks the marks-based positions against counting from the
// start of the file: the same line and character column for every offset,
// whatever the bytes (newlines, multi-byte characters, invalid UTF-8) and
// wherever the marks fall.
func FuzzPosition(f *testing.F) {
	f.Add([]byte("{\n  \"services\": []\n}\n"), uint(5))
	f.Add([]byte("é\nçà\n\xff\xfe\n"), uint(7))
	f.Add(oneLine(1000), uint(999))
	f.Add([]byte(string(make([]byte, posStride))+"\n\u00e9"), uint(posStride+2))
	f.Fuzz(func(t *testing.T, data []byte, at uint) {
		file := &file{name: "m.json", data: data}
		for _, off := range []int{0, len(data), int(at % uint(len(data)+1)), int(at % (posStride + 1))} {
			if off > len(data) {
				continue
			}
			line, col := file.pos(off)
			wantLine, wantCol := 1, 1
			for _, c := range data[:off] {
				switch {
				case c == '\n':
					wantLine, wantCol = wantLine+1, 1
				case c&0xC0 != 0x80:
					wantCol++
				}
			}
			if line != wantLine || col != wantCol {
				t.Fatalf("pos(%d) = %d:%d, want %d:%d", off, line, col, wantLine, wantCol)
			}
		}
	})
}
