package github

import "testing"

// TestMention: a typed GitHub user is mentioned as @login; any other kind of identity is written as it is
// recorded (a token named like a GitHub login is not that login); records written before identities were
// typed read as they did.
func TestMention(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"github:maria", "@maria"},
		{"maria", "@maria"},
		{"token:ci-locker", "token:ci-locker"},
		{"kubernetes:system:serviceaccount:ci:deployer", "kubernetes:system:serviceaccount:ci:deployer"},
		{"stagehand:skipConfirmation", "stagehand:skipConfirmation"},
		{"api", "the reconciler API"},
		{"github:alice, token:ci-locker", "@alice, token:ci-locker"},
		{"", ""},
	} {
		if got := mention(tc.in); got != tc.want {
			t.Errorf("mention(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
