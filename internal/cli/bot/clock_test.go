package bot

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// TestPrbotSoakOnGitHubsClock: prbot running two hours ahead or behind
// judges a 10m soak against GitHub's clock, which the check run's
// completed_at is on: a success 11 minutes old is ripe, one 5 minutes old
// is soaking, whatever the host's clock says.
func TestPrbotSoakOnGitHubsClock(t *testing.T) {
	for _, skew := range []time.Duration{2 * time.Hour, -2 * time.Hour} {
		for _, c := range []struct {
			age  time.Duration
			want string
		}{{11 * time.Minute, "devel → staging: opened"}, {5 * time.Minute, "devel → staging: none\nnothing ready: checkout-api: soaking: healthy in devel for 5m"}} {
			t.Run(skew.String()+"/"+c.age.String(), func(t *testing.T) {
				srv, environ := prbotRepo(t)
				head := srv.Repo("acme", "manifests").Commit("main", map[string]string{
					"pipeline.yaml": "stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    requires: {healthy: true, soak: 10m}\n",
				}, "soak 10m")
				srv.Repo("acme", "manifests").AddCheckRun(githubtest.CheckRun{Name: "stagehand/devel", HeadSHA: head, Status: "completed",
					Conclusion: "success", CompletedAt: time.Now().UTC().Add(-c.age)})
				var out, errOut bytes.Buffer
				root := newRoot(&out, &errOut)
				root.SetArgs([]string{"promote", "--repo", "acme/manifests", "--from", "devel", "--to", "staging"})
				deps := prbotDeps{
					lookup: func(k string) (string, bool) { v, ok := environ[k]; return v, ok },
					now:    func() time.Time { return time.Now().Add(skew) },
				}
				if err := root.ExecuteContext(withPrbotDeps(context.Background(), deps)); err != nil {
					t.Fatalf("prbot promote: %v\n%s", err, errOut.String())
				}
				if !strings.HasPrefix(out.String(), c.want) {
					t.Errorf("healthy %s ago, soak 10m, prbot's clock %s off: %q, want %q…", c.age, skew, out.String(), c.want)
				}
			})
		}
	}
}
