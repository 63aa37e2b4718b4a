package lock

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var durationRE = regexp.MustCompile(`^([0-9]+[smhd])+$`)
var durationPartRE = regexp.MustCompile(`([0-9]+)([smhd])`)

// ParseDuration parses a lock duration: whole numbers with the units s, m, h
// and d, optionally combined ("90m", "6h", "2d", "1h30m"). It must be positive.
func ParseDuration(s string) (time.Duration, error) {
	v := strings.TrimSpace(s)
	if !durationRE.MatchString(v) {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit s, m, h or d, such as 90m, 6h or 2d", s)
	}
	var d time.Duration
	for _, m := range durationPartRE.FindAllStringSubmatch(v, -1) {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > 1e6 {
			return 0, fmt.Errorf("invalid duration %q: %s%s is too large", s, m[1], m[2])
		}
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
		d += time.Duration(n) * unit
	}
	if d <= 0 {
		return 0, fmt.Errorf("invalid duration %q: must be longer than zero", s)
	}
	return d, nil
}

// untilLayouts are the accepted --until forms; without a zone they are local time.
var untilLayouts = []string{
	"2006-01-02T15:04",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// ParseUntil parses an absolute expiry such as 2022-12-31T12:00 (in loc) or
// 2022-12-31T12:00Z / 2022-12-31T12:00:00+01:00 (in the zone given).
func ParseUntil(s string, loc *time.Location) (time.Time, error) {
	v := strings.TrimSpace(s)
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		base := v[:len(v)-1]
		for _, l := range untilLayouts {
			if t, err := time.ParseInLocation(l, base, time.UTC); err == nil {
				return t, nil
			}
		}
	}
	for _, l := range []string{time.RFC3339, "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(l, v); err == nil {
			return t, nil
		}
	}
	for _, l := range untilLayouts {
		if t, err := time.ParseInLocation(l, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid time %q: want a time such as 2022-12-31T12:00 (local time) or 2022-12-31T12:00Z (UTC)", s)
}
