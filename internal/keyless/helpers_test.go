package keyless

import (
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
)

const (
	owner = prbottest.Owner
	repo  = prbottest.Repo
)

// checkoutFile and checkoutJSON are an owned file as internal/prbot's tests
// have it.
const checkoutFile = "environments/devel/checkout-api.json"

// checkoutJSON is an owned file with two services and unusual-but-valid
// formatting (two-space indent, inline container) the editor must keep.
const checkoutJSON = `{
  "services": [
    {
      "name": "checkout-api",
      "version": "1.5.0",
      "containers": [
        { "dockerTag": "1.5.0" },
        {
          "dockerName": "checkout-worker",
          "dockerTag": "1.5.0"
        }
      ]
    },
    {
      "name": "checkout-cron",
      "containers": [{"dockerTag": "0.3.0"}]
    }
  ]
}
`

// clock is the real time plus an offset tests move forward.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// fixture is prbottest's world and a bot for it.
type fixture struct {
	*prbottest.Fixture
	lockC prbot.LockChecker
}

func newFixture(t testing.TB, files map[string]string) *fixture {
	t.Helper()
	f := prbottest.New(t, files)
	return &fixture{Fixture: f, lockC: prbot.LockClient(f.LockClient, nil)}
}

func (f *fixture) bot(t testing.TB, opts ...prbot.Option) *prbot.Bot {
	t.Helper()
	opts = append([]prbot.Option{prbot.WithLocks(f.lockC), prbot.WithPollInterval(10 * time.Millisecond)}, opts...)
	b, err := prbot.New(f.GH, owner, repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
