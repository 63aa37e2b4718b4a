package bot

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/httpserve/httpservetest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
)

// TestPrbotServeDoorContract: prbot serve, configured with prbot.yaml's
// http limits, answers an unknown route, a wrong method and a webhook body
// over its cap with the API's JSON error body and status, 431 to headers
// over its limit, and cuts off a client that trickles its headers within
// http.readHeaderTimeout: the checks internal/api's TestDoorContract runs.
func TestPrbotServeDoorContract(t *testing.T) {
	srv, environ := prbotRepo(t)
	dir := t.TempDir()
	write := func(name, content string) string { return gitserver.WriteFile(t, dir, name, content) }
	addr := testenv.FreeAddr(t)
	cfg := write("prbot.yaml", fmt.Sprintf(`github:
  apiURL: %s
  owner: acme
  repo: manifests
  tokenFile: %s
  webhookSecretFile: %s
listen: %q
resync: 0s
http: {readHeaderTimeout: 300ms}
`, srv.URL(), write("token", environ["GITHUB_TOKEN"]), write("secret", "s3cret\n"), addr))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"serve", "--config", cfg, "--log-encoding", "console"})
		done <- command.Code(root.ExecuteContext(withPrbotDeps(ctx, prbotDeps{lookup: func(string) (string, bool) { return "", false }, now: time.Now})))
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	testenv.WaitFor(t, 20*time.Second, "prbot serve answering /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	httpservetest.Check(t, httpservetest.Door{Addr: addr, ReadHeaderTimeout: 300 * time.Millisecond,
		TooLarge: "/webhook/github", MaxBody: webhook.DefaultMaxBodyBytes, Route: "/healthz",
		Headers: map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "d1"}})
}
