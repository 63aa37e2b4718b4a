package approval

import (
	"errors"
	"testing"
)

func TestPrevious(t *testing.T) {
	e := func(id int64, result string) Entry { return Entry{ID: id, Result: result} }
	for _, tc := range []struct {
		name    string
		history []Entry // newest first
		want    int64   // 0: none
	}{
		{"empty", nil, 0},
		{"one success", []Entry{e(1, ResultSucceeded)}, 0},
		{"two successes", []Entry{e(2, ResultSucceeded), e(1, ResultSucceeded)}, 1},
		{"rejections are skipped", []Entry{e(4, ResultRejected), e(3, ResultSucceeded), e(2, ResultRejected), e(1, ResultSucceeded)}, 1},
		{"a failed apply is now; the last success ran before", []Entry{e(3, ResultFailed), e(2, ResultSucceeded), e(1, ResultSucceeded)}, 2},
		{"a rolled-back apply: what runs now", []Entry{e(3, ResultRolledBack), e(2, ResultSucceeded), e(1, ResultSucceeded)}, 2},
		{"failures before the success are skipped", []Entry{e(4, ResultSucceeded), e(3, ResultFailed), e(2, ResultInterrupted), e(1, ResultSucceeded)}, 1},
		{"only rejections", []Entry{e(1, ResultRejected)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Previous(tc.history)
			switch {
			case tc.want == 0 && ok:
				t.Errorf("Previous = entry %d; want none", got.ID)
			case tc.want != 0 && (!ok || got.ID != tc.want):
				t.Errorf("Previous = %+v, %v; want entry %d", got, ok, tc.want)
			}
		})
	}
}

func TestFindEntry(t *testing.T) {
	h := []Entry{{ID: 3}, {ID: 2}}
	if e, err := FindEntry(h, "prod", 2); err != nil || e.ID != 2 {
		t.Errorf("FindEntry(2) = %+v, %v", e, err)
	}
	for _, tc := range []struct {
		id   int64
		hist []Entry
		want string
	}{
		{1, h, "unknown history entry 1 in environment prod: it holds entries 2 to 3"},
		{0, h, "unknown history entry 0 in environment prod: it holds entries 2 to 3"},
		{1, nil, "unknown history entry 1 in environment prod: its history is empty"},
	} {
		_, err := FindEntry(tc.hist, "prod", tc.id)
		if !errors.Is(err, ErrUnknownEntry) || err.Error() != tc.want {
			t.Errorf("FindEntry(%d) = %v; want %q", tc.id, err, tc.want)
		}
	}
}
