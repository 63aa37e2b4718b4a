package policy

import "testing"

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
