package manifest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// checkName checks a service name: a Kubernetes label value that is not
// empty. It returns "" when valid, else the problem.
func checkName(v string) string {
	const accepted = "a Kubernetes label value: 1-63 characters, letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	if v == "" {
		return "empty service name; expected " + accepted
	}
	if len(v) > 63 {
		return fmt.Sprintf("service name %s is %d characters long; expected %s", quote(v), len(v), accepted)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		ok := isAlnum(c) || ((c == '-' || c == '_' || c == '.') && i > 0 && i < len(v)-1)
		if !ok {
			return fmt.Sprintf("invalid service name %s; expected %s", quote(v), accepted)
		}
	}
	return ""
}

// checkTag checks a docker tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func checkTag(v string) string {
	const accepted = "a docker tag: 1-128 characters of letters, digits, '_', '.' or '-', not starting with '.' or '-'"
	if v == "" {
		return "empty dockerTag; expected " + accepted
	}
	if len(v) > 128 {
		return fmt.Sprintf("dockerTag %s is %d characters long; expected %s", quote(v), len(v), accepted)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(isAlnum(c) || c == '_' || (i > 0 && (c == '.' || c == '-'))) {
			return fmt.Sprintf("invalid dockerTag %s; expected %s", quote(v), accepted)
		}
	}
	return ""
}

// checkDigest checks "sha256:" followed by 64 lowercase hex digits.
func checkDigest(v string) string {
	const accepted = `"sha256:" followed by 64 lowercase hexadecimal digits`
	hex := strings.TrimPrefix(v, "sha256:")
	if len(hex) != len(v)-7 || len(hex) != 64 {
		return fmt.Sprintf("invalid dockerDigest %s; expected %s", quote(v), accepted)
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Sprintf("invalid dockerDigest %s; expected %s", quote(v), accepted)
		}
	}
	return ""
}

// checkDockerName checks the docker repository grammar: an optional registry
// host[:port] followed by '/'-separated lowercase path components, each
// [a-z0-9]+ joined by '.', '_', '__' or runs of '-'.
func checkDockerName(v string) string {
	const accepted = "a docker repository name: lowercase path components of letters and digits separated by '/', each joined by '.', '_', '__' or '-', optionally after a registry host"
	bad := func() string { return fmt.Sprintf("invalid dockerName %s; expected %s", quote(v), accepted) }
	if v == "" {
		return "empty dockerName; expected " + accepted + " (or leave the key out to use the service name)"
	}
	if len(v) > 255 {
		return fmt.Sprintf("dockerName %s is %d characters long; at most 255 are accepted", quote(v), len(v))
	}
	rest := v
	if host, after, ok := strings.Cut(v, "/"); ok && (strings.ContainsAny(host, ".:") || host == "localhost") {
		if !validHost(host) {
			return bad()
		}
		rest = after
	}
	for {
		p, after, more := strings.Cut(rest, "/")
		if !validComponent(p) {
			return bad()
		}
		if !more {
			break
		}
		rest = after
	}
	return ""
}

func validComponent(p string) bool {
	if p == "" || !isLowerAlnum(p[0]) || !isLowerAlnum(p[len(p)-1]) {
		return false
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		switch {
		case isLowerAlnum(c):
		case c == '.':
			if !isLowerAlnum(p[i-1]) || !isLowerAlnum(p[i+1]) {
				return false
			}
		case c == '_':
			// "_" or "__" between alphanumerics.
			if p[i-1] == '_' {
				if i < 2 || !isLowerAlnum(p[i-2]) || !isLowerAlnum(p[i+1]) {
					return false
				}
			} else if !isLowerAlnum(p[i-1]) || !(isLowerAlnum(p[i+1]) || p[i+1] == '_') {
				return false
			}
		case c == '-':
			if !(isLowerAlnum(p[i-1]) || p[i-1] == '-') {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func validHost(h string) bool {
	host, port, hasPort := strings.Cut(h, ":")
	if hasPort {
		if port == "" || len(port) > 5 {
			return false
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '+' {
			return false
		}
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || !isAlnum(label[0]) || !isAlnum(label[len(label)-1]) {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isAlnum(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

// checkSemver checks a SemVer 2.0.0 version (no leading "v").
func checkSemver(v string) string {
	bad := func(why string) string {
		return fmt.Sprintf("invalid version %s (%s); expected SemVer 2.0 such as \"1.4.2\" or \"2.0.0-rc.1+build.5\"", quote(v), why)
	}
	if v == "" {
		return bad("empty")
	}
	core, build, hasBuild := strings.Cut(v, "+")
	core, pre, hasPre := strings.Cut(core, "-")
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return bad("need MAJOR.MINOR.PATCH")
	}
	for _, n := range nums {
		if !numericID(n) {
			return bad("MAJOR, MINOR and PATCH must be numbers without leading zeros")
		}
	}
	if hasPre {
		for _, id := range strings.Split(pre, ".") {
			if !alnumID(id) {
				return bad("bad pre-release identifier")
			}
			if allDigits(id) && !numericID(id) {
				return bad("numeric pre-release identifiers must not have leading zeros")
			}
		}
	}
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if !alnumID(id) {
				return bad("bad build metadata identifier")
			}
		}
	}
	return ""
}

func numericID(s string) bool { return allDigits(s) && (s == "0" || s[0] != '0') }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func alnumID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func quote(v string) string { return clip(strconv.Quote(v)) }

// Suggest returns the known key closest to k, or "" when none is close: a
// case-insensitive match first, then the smallest edit distance within a
// third of the key's length (at least 2). It drives every "did you mean"
// in manifest and pipeline errors.
func Suggest(k string, known []string) string {
	for _, c := range known {
		if strings.EqualFold(c, k) {
			return c
		}
	}
	best, bestD := "", max(2, len(k)/3)+1
	for _, c := range known {
		if d := distance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance between a and b, in bytes.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func joinKeys(keys []string) string { return strings.Join(keys, ", ") }

// CheckImage checks a tag and digest ("" for none) as the decoder and
// SetImage do, so that a caller can refuse them before any edit: the error
// names the value and what would be accepted.
func CheckImage(tag, digest string) error {
	if msg := checkTag(tag); msg != "" {
		return errors.New(msg)
	}
	if digest != "" {
		if msg := checkDigest(digest); msg != "" {
			return errors.New(msg)
		}
	}
	return nil
}
