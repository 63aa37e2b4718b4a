package prbot

import (
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
)

const (
	owner = prbottest.Owner
	repo  = prbottest.Repo
)

// fixture is prbottest's world and a bot for it.
type fixture struct {
	*prbottest.Fixture
	lockC LockChecker
}

func newFixture(t testing.TB, files map[string]string) *fixture {
	t.Helper()
	f := prbottest.New(t, files)
	return &fixture{Fixture: f, lockC: LockClient(f.LockClient, nil)}
}

func (f *fixture) bot(t testing.TB, opts ...Option) *Bot {
	t.Helper()
	opts = append([]Option{WithLocks(f.lockC), WithPollInterval(10 * time.Millisecond)}, opts...)
	b, err := New(f.GH, owner, repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// changedLines returns the lines of a and b that differ, position by position
// (both must have the same number of lines), as "-old" / "+new" pairs.
func changedLines(t *testing.T, a, b string) []string {
	t.Helper()
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		t.Fatalf("line count changed from %d to %d:\n%s\n---\n%s", len(la), len(lb), a, b)
	}
	var out []string
	for i := range la {
		if la[i] != lb[i] {
			out = append(out, "-"+la[i], "+"+lb[i])
		}
	}
	return out
}
