package gitsource

import "strings"

// ValidBranch reports whether b is a branch name git accepts
// (git check-ref-format's rules for refs/heads/<b>).
func ValidBranch(b string) bool {
	if b == "" || b == "@" || strings.HasPrefix(b, "-") || strings.HasSuffix(b, ".") || strings.HasSuffix(b, ".lock") ||
		strings.Contains(b, "..") || strings.Contains(b, "@{") || strings.ContainsAny(b, " ~^:?*[\\\x7f") {
		return false
	}
	for _, r := range b {
		if r < 0x20 {
			return false
		}
	}
	for _, c := range strings.Split(b, "/") {
		if c == "" || strings.HasPrefix(c, ".") {
			return false
		}
	}
	return true
}
