package policy

import (
	"fmt"
	"time"
)

// Explanation is a Calendar's judgement at a time for a person: whether plans may be applied, which
// window decided it, and when that changes.
type Explanation struct {
	// Open: plans may be applied.
	Open bool `json:"open"`
	// Why names what decided: "inside the allow window office-hours", "inside the deny window year-end",
	// "outside every allow window", "no window is configured".
	Why string `json:"why"`
	// Opens is when closed windows open next (zero: open, or not within 400 days); Closes is when open
	// windows close next (zero: closed, or not within 400 days).
	Opens  time.Time `json:"opens,omitzero"`
	Closes time.Time `json:"closes,omitzero"`
	zone   *time.Location
}

// String says it in one line, times in the windows' zone: "closed: inside the deny window year-end;
// opens Mon 4 Jan 2027 08:00 Europe/Berlin".
func (e Explanation) String() string {
	zone := e.zone
	if zone == nil {
		zone = time.UTC
	}
	at := func(t time.Time) string { return t.In(zone).Format("Mon 2 Jan 2006 15:04") + " " + zone.String() }
	switch {
	case e.Open && !e.Closes.IsZero():
		return fmt.Sprintf("open: %s; closes %s", e.Why, at(e.Closes))
	case e.Open:
		return "open: " + e.Why
	case !e.Opens.IsZero():
		return fmt.Sprintf("closed: %s; opens %s", e.Why, at(e.Opens))
	}
	return "closed: " + e.Why + "; no window opens within 400 days"
}

// Explain judges the windows at now as Judge does, and says which window decided and when that changes.
func (c *Calendar) Explain(now time.Time) Explanation {
	if c == nil {
		return Explanation{Open: true, Why: "no window is configured"}
	}
	if v := c.Judge(now); !v.Open {
		return Explanation{Why: v.Reason, Opens: v.Opens, zone: c.zone}
	}
	e := Explanation{Open: true, Why: "no deny window is in force and no allow window is configured", zone: c.zone}
	for _, s := range c.allow {
		if on, _ := s.active(now); on {
			e.Why = "inside the allow window " + s.name
			break
		}
	}
	e.Closes = c.boundary(now, false)
	return e
}

// boundary is the first boundary of a window after now (a firing, an end) at which the windows are open
// (open true) or closed (false), looked for within the horizon; zero when none.
func (c *Calendar) boundary(now time.Time, open bool) time.Time {
	t := now
	for range maxSteps {
		next := time.Time{}
		for _, s := range append(append([]*span(nil), c.allow...), c.deny...) {
			cand := []time.Time{s.next(t)}
			if on, end := s.active(t); on {
				cand = append(cand, end)
			}
			for _, b := range cand {
				if b.After(t) && (next.IsZero() || b.Before(next)) {
					next = b
				}
			}
		}
		if next.IsZero() || next.Sub(now) > horizon {
			return time.Time{}
		}
		t = next
		if c.open(t) == open {
			return t
		}
	}
	return time.Time{}
}
