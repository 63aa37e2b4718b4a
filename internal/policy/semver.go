package policy

import (
	"sort"
	"strconv"
	"strings"
)

// version is a tag read as semantic version major.minor.patch: a leading v and a pre-release or build
// suffix are allowed, missing minor and patch read as 0 (v2 is 2.0.0).
type version struct{ major, minor, patch int }

// parseVersion reads tag as a version; ok is false for a tag that is none (latest, a commit SHA). It
// allocates nothing: isMajorBump reads the tags of every change of a plan.
func parseVersion(tag string) (version, bool) {
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
