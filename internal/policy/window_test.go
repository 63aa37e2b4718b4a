package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestJudge judges windows at times across daylight-saving changes and in several zones: whether plans
// may be applied, and when closed, the message saying when the windows open.
func TestJudge(t *testing.T) {
	londonWeekdays := Window{Schedule: "CRON_TZ=Europe/London 0 8 * * 1-5", Duration: "9h"}
	for _, tc := range []struct {
		name string
		w    Windows
		now  string
		// opens is "" when open; else the message.
		want string
	}{
		{"no windows", Windows{}, "2026-11-27T23:00:00Z", ""},
		{"inside the weekday window, winter", Windows{Allow: []Window{londonWeekdays}}, "2026-11-27T16:59:00Z", ""},
		{"Friday evening waits for Monday", Windows{Allow: []Window{londonWeekdays}}, "2026-11-27T17:00:00Z",
			"waiting for the deploy window (outside every allow window): opens Mon 30 Nov 2026 08:00 Europe/London"},
		{"inside the weekday window, summer time", Windows{Allow: []Window{londonWeekdays}}, "2026-07-03T07:30:00Z", ""},
		{"before the window in summer time (07:30 UTC is 08:30 BST: open; 06:30 UTC is not)", Windows{Allow: []Window{londonWeekdays}},
			"2026-07-03T06:30:00Z", "waiting for the deploy window (outside every allow window): opens Fri 3 Jul 2026 08:00 Europe/London"},
		{"across the spring change: Monday 08:00 BST is 07:00 UTC", Windows{Allow: []Window{londonWeekdays}}, "2026-03-28T12:00:00Z",
			"waiting for the deploy window (outside every allow window): opens Mon 30 Mar 2026 08:00 Europe/London"},
		{"across the autumn change: Monday 08:00 GMT", Windows{Allow: []Window{londonWeekdays}}, "2026-10-24T12:00:00Z",
			"waiting for the deploy window (outside every allow window): opens Mon 26 Oct 2026 08:00 Europe/London"},
		{"New York on the day its summer time starts", Windows{Allow: []Window{{Schedule: "CRON_TZ=America/New_York 0 9 * * *", Duration: "1h"}}},
			"2026-03-08T12:30:00Z", "waiting for the deploy window (outside every allow window): opens Sun 8 Mar 2026 09:00 America/New_York"},
		{"New York the day before: 13:30 UTC is 08:30 EST", Windows{Allow: []Window{{Schedule: "CRON_TZ=America/New_York 0 9 * * *", Duration: "1h"}}},
			"2026-03-07T13:30:00Z", "waiting for the deploy window (outside every allow window): opens Sat 7 Mar 2026 09:00 America/New_York"},
		{"New York on that day at 13:30 UTC is 09:30 EDT: open", Windows{Allow: []Window{{Schedule: "CRON_TZ=America/New_York 0 9 * * *", Duration: "1h"}}},
			"2026-03-08T13:30:00Z", ""},
		{"a half-hour zone", Windows{Allow: []Window{{Schedule: "CRON_TZ=Asia/Kolkata 0 10 * * *", Duration: "2h"}}}, "2026-06-01T03:00:00Z",
			"waiting for the deploy window (outside every allow window): opens Mon 1 Jun 2026 10:00 Asia/Kolkata"},
		{"year-end freeze in Berlin, read in its zone", Windows{Deny: []Window{{Name: "year-end", From: "2026-12-19", To: "2027-01-04T08:00", TimeZone: "Europe/Berlin"}}},
			"2026-12-24T12:00:00Z", "waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"},
		{"the freeze starts at Berlin's midnight, 23:00 UTC", Windows{Deny: []Window{{Name: "year-end", From: "2026-12-19", To: "2027-01-04", TimeZone: "Europe/Berlin"}}},
			"2026-12-18T22:59:59Z", ""},
		{"the freeze's end is open", Windows{Deny: []Window{{From: "2026-12-19T00:00:00Z", To: "2027-01-04T00:00:00Z"}}}, "2027-01-04T00:00:00Z", ""},
		{"an unnamed freeze is named by its key", Windows{Deny: []Window{{From: "2026-12-19T00:00:00Z", To: "2027-01-04T00:00:00Z"}}},
			"2027-01-03T00:00:00Z", "waiting for the deploy window (inside the deny window deny[0]): opens Mon 4 Jan 2027 00:00 UTC"},
		{"a freeze ending on Saturday waits for Monday's window", Windows{Allow: []Window{londonWeekdays},
			Deny: []Window{{Name: "release-week", From: "2026-11-23T00:00:00Z", To: "2026-11-28T12:00:00Z"}}}, "2026-11-25T10:00:00Z",
			"waiting for the deploy window (inside the deny window release-week): opens Mon 30 Nov 2026 08:00 Europe/London"},
		{"a weekly freeze from Friday 15:00 for 65 hours", Windows{Deny: []Window{{Name: "weekend", Schedule: "CRON_TZ=Europe/London 0 15 * * 5", Duration: "65h"}}},
			"2026-11-27T16:00:00Z", "waiting for the deploy window (inside the deny window weekend): opens Mon 30 Nov 2026 08:00 Europe/London"},
		{"windows back to back stay open", Windows{Allow: []Window{{Schedule: "0 8 * * *", Duration: "4h"}, {Schedule: "0 12 * * *", Duration: "5h"}}},
			"2026-11-27T12:00:00Z", ""},
		{"a freeze inside an allow window closes it until the freeze ends", Windows{Allow: []Window{londonWeekdays},
			Deny: []Window{{Name: "incident", From: "2026-11-27T09:00:00Z", To: "2026-11-27T11:30:00Z"}}}, "2026-11-27T10:00:00Z",
			"waiting for the deploy window (inside the deny window incident): opens Fri 27 Nov 2026 11:30 Europe/London"},
		{"a schedule that never fires never opens", Windows{Allow: []Window{{Schedule: "0 0 30 2 *", Duration: "1h"}}}, "2026-11-27T12:00:00Z",
			"waiting for the deploy window (outside every allow window): no window opens within 400 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCalendar(tc.w)
			if err != nil {
				t.Fatal(err)
			}
			v := c.Judge(utc(tc.now))
			if diff := cmp.Diff(tc.want, v.Message()); diff != "" {
				t.Errorf("Judge(%s).Message() (-want +got):\n%s", tc.now, diff)
			}
			if v.Open != (tc.want == "") {
				t.Errorf("Judge(%s).Open = %v", tc.now, v.Open)
			}
			if !v.Open && !v.Opens.IsZero() && (!v.Opens.After(utc(tc.now)) || !c.Judge(v.Opens).Open || c.Judge(v.Opens.Add(-time.Second)).Open) {
				t.Errorf("Opens %v is not the first time the windows are open after %s", v.Opens, tc.now)
			}
		})
	}
}

func TestNewCalendarErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Windows
		want string
	}{
		{"both shapes", Windows{Allow: []Window{{Schedule: "0 8 * * *", Duration: "1h", From: "2026-12-19"}}}, "allow[0].schedule: a window is a schedule with a duration or a range from … to, not both"},
		{"neither", Windows{Deny: []Window{{Name: "x"}}}, "deny[0].schedule: want a schedule with a duration, or a range from … to"},
		{"a bad schedule", Windows{Allow: []Window{{Schedule: "0 8 * *", Duration: "1h"}}}, `allow[0].schedule: parse "0 8 * *": expected exactly 5 fields, found 4: [0 8 * *]`},
		{"an unknown zone", Windows{Allow: []Window{{Schedule: "CRON_TZ=Mars/Olympus 0 8 * * *", Duration: "1h"}}}, "allow[0].schedule: parse \"CRON_TZ=Mars/Olympus 0 8 * * *\": provided bad location Mars/Olympus: unknown time zone Mars/Olympus"},
		{"no duration", Windows{Allow: []Window{{Schedule: "0 8 * * *"}}}, `allow[0].duration: "": want a positive duration up to 366 days, e.g. 9h`},
		{"a negative duration", Windows{Allow: []Window{{Schedule: "0 8 * * *", Duration: "-1h"}}}, `allow[0].duration: "-1h": want a positive duration up to 366 days, e.g. 9h`},
		{"timeZone beside a schedule", Windows{Allow: []Window{{Schedule: "0 8 * * *", Duration: "1h", TimeZone: "UTC"}}}, "allow[0].timeZone: a schedule names its zone with a leading CRON_TZ=Zone"},
		{"a range without its end", Windows{Deny: []Window{{From: "2026-12-19"}}}, "deny[0].to: missing: want a time such as 2026-12-19, 2026-12-19T18:00 or 2026-12-19T18:00:00Z"},
		{"a range backwards", Windows{Deny: []Window{{From: "2026-12-19", To: "2026-12-18"}}}, "deny[0].to: 2026-12-18 is not after from 2026-12-19"},
		{"a range not a time", Windows{Deny: []Window{{From: "Christmas", To: "2026-12-18"}}}, `deny[0].from: "Christmas": want a time such as 2026-12-19, 2026-12-19T18:00 or 2026-12-19T18:00:00Z`},
		{"an unknown range zone", Windows{Deny: []Window{{From: "2026-12-19", To: "2026-12-20", TimeZone: "Nowhere"}}}, `deny[0].timeZone: "Nowhere": unknown time zone Nowhere`},
		{"too many", Windows{Deny: make([]Window, MaxWindows+1)}, "101 windows: at most 100"},
		{"a huge schedule", Windows{Allow: []Window{{Schedule: strings.Repeat("1,", 200) + "1 * * * *", Duration: "1h"}}}, "allow[0].schedule: 409 characters long: at most 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCalendar(tc.w)
			if err == nil || err.Error() != tc.want {
				t.Errorf("NewCalendar error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestExplain: the explanation names the window that decides and when that changes, in the windows' zone.
func TestExplain(t *testing.T) {
	office := Window{Name: "office-hours", Schedule: "CRON_TZ=Europe/London 0 8 * * 1-5", Duration: "9h"}
	yearEnd := Window{Name: "year-end", From: "2026-12-19", To: "2027-01-04T08:00", TimeZone: "Europe/London"}
	for _, tc := range []struct {
		name string
		w    Windows
		now  string
		want string
	}{
		{"no windows", Windows{}, "2026-11-27T12:00:00Z", "open: no window is configured"},
		{"inside an allow window", Windows{Allow: []Window{office}}, "2026-11-27T12:00:00Z",
			"open: inside the allow window office-hours; closes Fri 27 Nov 2026 17:00 Europe/London"},
		{"outside every allow window", Windows{Allow: []Window{office}}, "2026-11-28T12:00:00Z",
			"closed: outside every allow window; opens Mon 30 Nov 2026 08:00 Europe/London"},
		{"inside a freeze", Windows{Allow: []Window{office}, Deny: []Window{yearEnd}}, "2026-12-24T12:00:00Z",
			"closed: inside the deny window year-end; opens Mon 4 Jan 2027 08:00 Europe/London"},
		{"before a freeze", Windows{Deny: []Window{yearEnd}}, "2026-12-18T12:00:00Z",
			"open: no deny window is in force and no allow window is configured; closes Sat 19 Dec 2026 00:00 Europe/London"},
		{"after the last freeze", Windows{Deny: []Window{yearEnd}}, "2027-02-01T12:00:00Z",
			"open: no deny window is in force and no allow window is configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCalendar(tc.w)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Explain(utc(tc.now)).String(); got != tc.want {
				t.Errorf("Explain = %q\nwant       %q", got, tc.want)
			}
		})
	}
}
