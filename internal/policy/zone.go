package policy

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// maxZones bounds how many zones a Compiler keeps loaded: a rule may name its zone from the input
// (a trailer), and only names the zone database knows are kept.
const maxZones = 1000

// zones are the time zones a Compiler's rules named, each loaded once: CEL's own getHours("Europe/London")
// loads the zone (reads and parses its file, some 25 µs and 8 KB) at every call, in every decision.
type zones struct {
	load   func(name string) (*time.Location, error)
	mu     sync.Mutex
	byName map[string]*time.Location
}

func newZones(load func(string) (*time.Location, error)) *zones {
	return &zones{load: load, byName: map[string]*time.Location{}}
}

// location is the zone name as time.LoadLocation reads it; an error is not kept (the next call tries
// again, as CEL's would).
func (z *zones) location(name string) (*time.Location, error) {
	z.mu.Lock()
	loc, ok := z.byName[name]
	z.mu.Unlock()
	if ok {
		return loc, nil
	}
	loc, err := z.load(name)
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	if len(z.byName) < maxZones {
		z.byName[name] = loc
	}
	z.mu.Unlock()
	return loc, nil
}

// in is ts in the zone tz, read as CEL reads it: an IANA name, or an offset from UTC such as "+05:30"
// or "-08:00" (the hours carry the sign; the minutes follow it).
func (z *zones) in(ts, tz ref.Val) (time.Time, error) {
	t, _ := ts.(types.Timestamp)
	val, _ := tz.(types.String)
	s := string(val)
	ind := strings.Index(s, ":")
	if ind == -1 {
		loc, err := z.location(s)
		if err != nil {
			return time.Time{}, err
		}
		return t.In(loc), nil
	}
	hr, err := strconv.Atoi(s[:ind])
	if err != nil {
		return time.Time{}, err
	}
	minutes, err := strconv.Atoi(s[ind+1:])
	if err != nil {
		return time.Time{}, err
	}
	offset := hr*60 + minutes
	if s[0] == '-' {
		offset = hr*60 - minutes
	}
	return t.In(time.FixedZone("", int((time.Duration(offset) * time.Minute).Seconds()))), nil
}

// functions redefine the implementations of CEL's timestamp accessors that take a zone (the same
// overloads, the same results and errors) to load each zone once.
func (z *zones) functions() []cel.EnvOption {
	accessors := []struct {
		function, overload string
		part               func(time.Time) int
	}{
		{overloads.TimeGetFullYear, overloads.TimestampToYearWithTz, func(t time.Time) int { return t.Year() }},
		{overloads.TimeGetMonth, overloads.TimestampToMonthWithTz, func(t time.Time) int { return int(t.Month()) - 1 }},
		{overloads.TimeGetDayOfYear, overloads.TimestampToDayOfYearWithTz, func(t time.Time) int { return t.YearDay() - 1 }},
		{overloads.TimeGetDayOfMonth, overloads.TimestampToDayOfMonthZeroBasedWithTz, func(t time.Time) int { return t.Day() - 1 }},
		{overloads.TimeGetDate, overloads.TimestampToDayOfMonthOneBasedWithTz, func(t time.Time) int { return t.Day() }},
		{overloads.TimeGetDayOfWeek, overloads.TimestampToDayOfWeekWithTz, func(t time.Time) int { return int(t.Weekday()) }},
		{overloads.TimeGetHours, overloads.TimestampToHoursWithTz, func(t time.Time) int { return t.Hour() }},
		{overloads.TimeGetMinutes, overloads.TimestampToMinutesWithTz, func(t time.Time) int { return t.Minute() }},
		{overloads.TimeGetSeconds, overloads.TimestampToSecondsWithTz, func(t time.Time) int { return t.Second() }},
		{overloads.TimeGetMilliseconds, overloads.TimestampToMillisecondsWithTz, func(t time.Time) int { return t.Nanosecond() / 1e6 }},
	}
	out := make([]cel.EnvOption, len(accessors))
	for i, a := range accessors {
		out[i] = cel.Function(a.function, cel.MemberOverload(a.overload, []*cel.Type{cel.TimestampType, cel.StringType}, cel.IntType,
			cel.BinaryBinding(func(ts, tz ref.Val) ref.Val {
				t, err := z.in(ts, tz)
				if err != nil {
					return types.NewErrFromString(err.Error())
				}
				return types.Int(a.part(t))
			})))
	}
	return out
}
