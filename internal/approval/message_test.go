package approval

import "testing"

// TestJoinMax: up to n messages are joined; past n, the rest are counted.
func TestJoinMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []string
		want string
	}{
		{name: "none", want: ""},
		{name: "one", msgs: []string{"a"}, want: "a"},
		{name: "exactly n", msgs: []string{"a", "b"}, want: "a; b"},
		{name: "more than n", msgs: []string{"a", "b", "c", "d"}, want: "a; b; and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JoinMax(tc.msgs, 2); got != tc.want {
				t.Errorf("JoinMax(%q, 2) = %q, want %q", tc.msgs, got, tc.want)
			}
		})
	}
}

// TestShortRevision: a revision is cut to 12 characters; a shorter one is
// kept whole.
func TestShortRevision(t *testing.T) {
	for rev, want := range map[string]string{
		"0123456789abcdef0123": "0123456789ab",
		"0123456789ab":         "0123456789ab",
		"abc":                  "abc",
		"":                     "",
	} {
		if got := ShortRevision(rev); got != want {
			t.Errorf("ShortRevision(%q) = %q, want %q", rev, got, want)
		}
	}
}
