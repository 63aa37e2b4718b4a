package approval

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckReason(t *testing.T) {
	for _, tc := range []struct {
		name, reason, want, err string
	}{
		{name: "trimmed", reason: "  payments outage INC-42 \n", want: "payments outage INC-42"},
		{name: "unicode text", reason: "Zahlungsausfall – INC-42 ✓", want: "Zahlungsausfall – INC-42 ✓"},
		{name: "empty", reason: "", err: "empty"},
		{name: "only spaces", reason: " \t\n ", err: "empty"},
		{name: "huge", reason: strings.Repeat("x", MaxBreakGlassReason+1), err: "501 characters long: at most 500"},
		{name: "at the limit", reason: strings.Repeat("é", MaxBreakGlassReason), want: strings.Repeat("é", MaxBreakGlassReason)},
		{name: "a forged line", reason: "fix\nbreak-glass by github:ceo: approved", err: "control character U+000A"},
		{name: "an escape sequence", reason: "fix \x1b[2Jcleared", err: "control character U+001B"},
		{name: "a bidi override", reason: "fix \u202egnp.exe", err: "control character U+202E"},
		{name: "not UTF-8", reason: "fix \xff", err: "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckReason(tc.reason)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadReason) {
					t.Fatalf("CheckReason = %q, %v; want an ErrBadReason saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("CheckReason = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
