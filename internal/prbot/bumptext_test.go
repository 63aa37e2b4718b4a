package prbot

import "testing"

func TestNewerTag(t *testing.T) {
	tests := []struct {
		have, want string
		newer      bool
	}{
		{"1.7.0", "1.6.9", true},
		{"1.6.9", "1.7.0", false},
		{"1.7.0", "1.7.0", false},
		{"v2.0.0", "1.9.9", true},
		{"1.10.0", "1.9.0", true}, // numeric, not lexical
		{"1.7.0", "1.7.0-rc.1", true},
		{"1.7.0-rc.1", "1.7.0", false},
		{"1.7.0-rc.2", "1.7.0-rc.1", true},
		{"1.7", "1.6.5", true},
		{"latest", "1.0.0", false}, // not a version: the latest bump wins
		{"1.0.0", "main-abc123", false},
		{"2024.01.02", "2023.12.31", true},
	}
	for _, tt := range tests {
		if got := newerTag(tt.have, tt.want); got != tt.newer {
			t.Errorf("newerTag(%q, %q) = %v, want %v", tt.have, tt.want, got, tt.newer)
		}
	}
}
