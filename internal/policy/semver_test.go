package policy

import (
	"strconv"
	"strings"
	"testing"
)

func TestBump(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"1.2.3", "2.0.0", "major"},
		{"v1", "v2", "major"},
		{"V1.9", "v2.0.0-rc.1", "major"},
		{"1.2", "1.3", "minor"},
		{"1.2.3", "1.2.4+build.5", "patch"},
		{"1.2.3", "1.2.3", ""},
		{"2.0.0", "1.9.9", ""},
		{"1.3.0", "1.2.9", ""},
		{"1.2.3", "1.2.3.4", ""},
		{"1..2", "1.3", ""},
		{"1.2.", "1.3", ""},
		{"", "1.0.0", ""},
		{"latest", "1.0.0", ""},
		{"1.0.0", "3f2a9c1d", ""},
		{"1.0.0", "1234567890.0.0", ""},
		{"1.0.0", "2.x", ""},
	} {
		t.Run(tc.from+"→"+tc.to, func(t *testing.T) {
			if got := bump(tc.from, tc.to); got != tc.want {
				t.Errorf("bump(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
			}
		})
	}
}

// parseVersionByParts is parseVersion as it was first written, part by part: FuzzParseVersion holds the
// one-pass reading to it.
func parseVersionByParts(tag string) (version, bool) {
	s := strings.TrimPrefix(strings.TrimPrefix(tag, "v"), "V")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	var n [3]int
	for i := range n {
		part, rest, more := strings.Cut(s, ".")
		if part == "" || len(part) > 9 || strings.Trim(part, "0123456789") != "" {
			return version{}, false
		}
		n[i], _ = strconv.Atoi(part)
		if !more {
			return version{n[0], n[1], n[2]}, true
		}
		s = rest
	}
	return version{}, false
}

// FuzzParseVersion: the one-pass parseVersion reads every tag as parseVersionByParts does.
func FuzzParseVersion(f *testing.F) {
	for _, tag := range []string{"1.2.3", "v1", "V1.9", "v2.0.0-rc.1", "1.2.4+build.5", "1.2.3.4", "1..2", "1.2.", "", "latest",
		"3f2a9c1d", "1234567890.0.0", "123456789.0.0", "2.x", "vV1.0", "Vv1.0", ".1", "1.-2", "0001.02", "1.2.3-", "١.٢"} {
		f.Add(tag)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		v, ok := parseVersion(tag)
		wv, wok := parseVersionByParts(tag)
		if v != wv || ok != wok {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, %v", tag, v, ok, wv, wok)
		}
	})
}
