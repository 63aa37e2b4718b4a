package policy

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a window names its zone; the image may carry no zoneinfo

	"github.com/robfig/cron/v3"
)

// Windows are environments.<env>.windows: when the environment's plans may be applied. Outside every
// Allow window (when there is one) or inside any Deny window, nothing is applied: an auto-approved or
// approved plan waits, deferred, until the windows open.
type Windows struct {
	// Allow are the windows in which plans may be applied (none: always, unless denied).
	Allow []Window `json:"allow,omitempty"`
	// Deny are the windows in which no plan is applied (freezes, holidays, the year-end).
	Deny []Window `json:"deny,omitempty"`
	// BreakGlass is who may let one plan through while the windows are closed (nil: a caller with
	// lock:admin or approve:<env>), always with a reason.
	BreakGlass *BreakGlass `json:"breakGlass,omitempty"`
}

// BreakGlass is environments.<env>.windows.breakGlass.
type BreakGlass struct {
	// Scopes are the API scopes any one of which lets a caller break the glass: lock, lock:admin,
	// approve:<environment>. Empty: nobody.
	Scopes []string `json:"scopes"`
}

// MaxBreakGlassScopes bounds windows.breakGlass.scopes.
const MaxBreakGlassScopes = 20

// Window is one deploy window: either a cron schedule (a leading CRON_TZ=Zone names its zone, UTC
// otherwise) with the Duration it stays open after each firing, or a dated range [From, To).
type Window struct {
	// Name names the window in messages ("year-end"); default allow[i] or deny[i].
	Name string `json:"name,omitempty"`
	// Schedule is a five-field cron schedule, e.g. "CRON_TZ=Europe/London 0 8 * * 1-4".
	Schedule string `json:"schedule,omitempty"`
	// Duration is how long the window is open after each firing of Schedule (Go syntax: 9h, 90m).
	Duration string `json:"duration,omitempty"`
	// From and To bound a dated range: RFC 3339 (2026-12-19T00:00:00Z), or a date (2026-12-19) or a
	// date and time (2026-12-19T18:00) read in TimeZone.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// TimeZone is the IANA zone of a dated range written without an offset (default UTC).
	TimeZone string `json:"timeZone,omitempty"`
}

// Limits of windows, checked when they are compiled.
const (
	// MaxWindows bounds the allow and deny entries of one environment together.
	MaxWindows = 100
	// maxWindowDuration bounds a cron window's duration.
	maxWindowDuration = 366 * 24 * time.Hour
	// horizon is how far ahead Judge looks for the windows to open.
	horizon = 400 * 24 * time.Hour
	// maxSteps bounds the boundaries Judge walks through looking for it.
	maxSteps = 10000
)

// span is one compiled window.
type span struct {
	name string
	// sched and dur: a cron window; from and to: a dated range.
	sched    cron.Schedule
	dur      time.Duration
	from, to time.Time
}

// active reports whether the window is open at t, and then one time after t at which it may close.
func (s *span) active(t time.Time) (bool, time.Time) {
	if s.sched == nil {
		return !t.Before(s.from) && t.Before(s.to), s.to
	}
	fire := s.sched.Next(t.Add(-s.dur))
	if fire.IsZero() || fire.After(t) { // zero: the schedule never fires (30 February)
		return false, time.Time{}
	}
	return true, fire.Add(s.dur)
}

// next is the next time after t at which the window opens (zero: never).
func (s *span) next(t time.Time) time.Time {
	if s.sched == nil {
		if s.from.After(t) {
			return s.from
		}
		return time.Time{}
	}
	return s.sched.Next(t)
}

// Calendar is an environment's compiled windows, judged on the API server's clock.
type Calendar struct {
	allow, deny []*span
	// zone is where times are shown: the zone of the first window that names one.
	zone *time.Location
}

var windowCron = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// NewCalendar compiles w; an error names the entry and field ("deny[1].to: …"). Nil windows (no entry)
// give a nil Calendar, always open.
func NewCalendar(w Windows) (*Calendar, error) {
	if len(w.Allow) == 0 && len(w.Deny) == 0 {
		return nil, nil
	}
	if n := len(w.Allow) + len(w.Deny); n > MaxWindows {
		return nil, fmt.Errorf("%d windows: at most %d", n, MaxWindows)
	}
	c := &Calendar{}
	for _, side := range []struct {
		key  string
		in   []Window
		into *[]*span
	}{{"allow", w.Allow, &c.allow}, {"deny", w.Deny, &c.deny}} {
		for i, win := range side.in {
			key := fmt.Sprintf("%s[%d]", side.key, i)
			s, zone, err := compileWindow(win)
			if err != nil {
				return nil, fmt.Errorf("%s.%w", key, err)
			}
			if s.name == "" {
				s.name = key
			}
			if c.zone == nil {
				c.zone = zone
			}
			*side.into = append(*side.into, s)
		}
	}
	if c.zone == nil {
		c.zone = time.UTC
	}
	return c, nil
}

// compileWindow compiles one window, and the zone it names (nil: none); an error starts with the field.
func compileWindow(w Window) (*span, *time.Location, error) {
	s := &span{name: w.Name}
	cronish, dated := w.Schedule != "" || w.Duration != "", w.From != "" || w.To != ""
	switch {
	case cronish && dated:
		return nil, nil, fmt.Errorf("schedule: a window is a schedule with a duration or a range from … to, not both")
	case !cronish && !dated:
		return nil, nil, fmt.Errorf("schedule: want a schedule with a duration, or a range from … to")
	case cronish:
		if w.TimeZone != "" {
			return nil, nil, fmt.Errorf("timeZone: a schedule names its zone with a leading CRON_TZ=Zone")
		}
		if len(w.Schedule) > 256 {
			return nil, nil, fmt.Errorf("schedule: %d characters long: at most 256", len(w.Schedule))
		}
		sched, err := windowCron.Parse(w.Schedule)
		if err != nil {
			return nil, nil, fmt.Errorf("schedule: parse %q: %w", w.Schedule, err)
		}
		d, err := time.ParseDuration(w.Duration)
		if err != nil || d <= 0 || d > maxWindowDuration {
			return nil, nil, fmt.Errorf("duration: %q: want a positive duration up to 366 days, e.g. 9h", w.Duration)
		}
		s.sched, s.dur = sched, d
		return s, scheduleZone(w.Schedule), nil
	}
	zone := time.UTC
	if w.TimeZone != "" {
		z, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			return nil, nil, fmt.Errorf("timeZone: %q: %w", w.TimeZone, err)
		}
		zone = z
	}
	var err error
	if s.from, err = parseWhen(w.From, zone); err != nil {
		return nil, nil, fmt.Errorf("from: %w", err)
	}
	if s.to, err = parseWhen(w.To, zone); err != nil {
		return nil, nil, fmt.Errorf("to: %w", err)
	}
	if !s.to.After(s.from) {
		return nil, nil, fmt.Errorf("to: %s is not after from %s", w.To, w.From)
	}
	if w.TimeZone == "" {
		return s, nil, nil
	}
	return s, zone, nil
}

// scheduleZone is the zone a schedule's CRON_TZ= or TZ= prefix names (nil: none; the parser checked it).
func scheduleZone(schedule string) *time.Location {
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(schedule, prefix); ok {
			name, _, _ := strings.Cut(rest, " ")
			if z, err := time.LoadLocation(name); err == nil {
				return z
			}
		}
	}
	return nil
}

// parseWhen reads a range's end: RFC 3339, or a date or date and time in zone.
func parseWhen(s string, zone *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("missing: want a time such as 2026-12-19, 2026-12-19T18:00 or 2026-12-19T18:00:00Z")
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, zone); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a time such as 2026-12-19, 2026-12-19T18:00 or 2026-12-19T18:00:00Z", s)
}

// Verdict is whether plans may be applied at a time, and if not, why and until when.
type Verdict struct {
	// Open: plans may be applied.
	Open bool
	// Opens is when the windows open next (zero when open, or when they open within no horizon).
	Opens time.Time
	// Reason names what closes them: "inside the deny window year-end", "outside every allow window".
	Reason string
	zone   *time.Location
}

// Message is what a deferred plan says: "waiting for the deploy window (inside the deny window
// year-end): opens Mon 4 Jan 08:00 Europe/London".
func (v Verdict) Message() string {
	if v.Open {
		return ""
	}
	msg := "waiting for the deploy window (" + v.Reason + ")"
	if v.Opens.IsZero() {
		return msg + ": no window opens within 400 days"
	}
	zone := v.zone
	if zone == nil {
		zone = time.UTC
	}
	return msg + ": opens " + v.Opens.In(zone).Format("Mon 2 Jan 2006 15:04") + " " + zone.String()
}

// open reports whether plans may be applied at t.
func (c *Calendar) open(t time.Time) bool {
	for _, s := range c.deny {
		if on, _ := s.active(t); on {
			return false
		}
	}
	if len(c.allow) == 0 {
		return true
	}
	for _, s := range c.allow {
		if on, _ := s.active(t); on {
			return true
		}
	}
	return false
}

// Judge says whether plans may be applied at now (the API server's clock), and when closed, why and when
// the windows open next: the first boundary of a window (a firing, a window's end, a range's end) at which
// they are open, looked for within 400 days. A nil Calendar is always open.
func (c *Calendar) Judge(now time.Time) Verdict {
	if c == nil || c.open(now) {
		return Verdict{Open: true}
	}
	v := Verdict{Reason: "outside every allow window", zone: c.zone}
	for _, s := range c.deny {
		if on, _ := s.active(now); on {
			v.Reason = "inside the deny window " + s.name
			break
		}
	}
	t := now
	for range maxSteps {
		next := time.Time{}
		consider := func(b time.Time) {
			if b.After(t) && (next.IsZero() || b.Before(next)) {
				next = b
			}
		}
		for _, s := range append(append([]*span(nil), c.allow...), c.deny...) {
			if on, end := s.active(t); on {
				consider(end)
			}
			consider(s.next(t))
		}
		if next.IsZero() || next.Sub(now) > horizon {
			return v
		}
		t = next
		if c.open(t) {
			v.Opens = t
			return v
		}
	}
	return v
}
