package policy

import (
	"sort"
	"strings"
)

// version is a tag read as semantic version major.minor.patch: a leading v and a pre-release or build
// suffix are allowed, missing minor and patch read as 0 (v2 is 2.0.0).
type version struct{ major, minor, patch int }

// parseVersion reads tag as a version; ok is false for a tag that is none (latest, a commit SHA). It
// reads the tag in one pass and allocates nothing: isMajorBump reads the tags of every change of a plan.
func parseVersion(tag string) (version, bool) {
	s := strings.TrimPrefix(strings.TrimPrefix(tag, "v"), "V")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	var n [3]int
	part, digits := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9' && digits < 9:
			n[part] = n[part]*10 + int(c-'0')
			digits++
		case c == '.' && digits > 0 && part < len(n)-1:
			part, digits = part+1, 0
		default:
			return version{}, false
		}
	}
	if digits == 0 {
		return version{}, false
	}
	return version{n[0], n[1], n[2]}, true
}

// bump says which part of the version went up from from to to: "major", "minor", "patch", or "" when
// the tags are no versions, equal, or went down.
func bump(from, to string) string {
	a, okA := parseVersion(from)
	b, okB := parseVersion(to)
	switch {
	case !okA || !okB:
		return ""
	case b.major > a.major:
		return "major"
	case b.major < a.major:
		return ""
	case b.minor > a.minor:
		return "minor"
	case b.minor < a.minor:
		return ""
	case b.patch > a.patch:
		return "patch"
	}
	return ""
}

func sortStrings(s []string) { sort.Strings(s) }
