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
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/tracing/tracingtest"
)

// TestPrbotServeTraces: with tracing.endpoint prbot serve traces each
// promotion it evaluates (a span "promotion" naming the stages, what it did
// and its pull request) and every request, continuing a webhook's
// traceparent; the spans reach the collector by the time serve has exited.
func TestPrbotServeTraces(t *testing.T) {
	srv, environ := prbotRepo(t)
	recv := tracingtest.Start(t)
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
tracing: {endpoint: %q, protocol: grpc}
`, srv.URL(), write("token", environ["GITHUB_TOKEN"]), write("secret", "s3cret\n"), addr, recv.GRPCURL()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"serve", "--config", cfg, "--log-encoding", "console"})
		done <- command.Code(root.ExecuteContext(withPrbotDeps(ctx, prbotDeps{lookup: func(string) (string, bool) { return "", false }, now: time.Now})))
	}()
	testenv.WaitFor(t, 20*time.Second, "the promotion pull request", func() bool { return len(srv.Repo("acme", "manifests").PullRequests()) == 1 })
	d := srv.Webhooks("acme", "manifests").Push("main", "0000000000000000000000000000000000000000", srv.Repo("acme", "manifests").Branch("main"), "someone")
	req, err := d.Request(ctx, "http://"+addr+"/webhook/github", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("push answered %v, %v; want 200", resp, err)
	}
	resp.Body.Close()
	// The evaluation at start ends once the pull request is opened and its text written: its span is
	// exported (in the background, by the batch) once it ended.
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if _, err := recv.Wait(wctx, func(spans []tracingtest.Span) bool {
		for _, s := range spans {
			if s.Name == "promotion" && s.Attributes["stagehand.action"] != "" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	var opened, receipt bool
	for _, s := range recv.Spans() {
		a := s.Attributes
		if s.Name == "promotion" && a["stagehand.from"] == "devel" && a["stagehand.environment"] == "staging" &&
			a["stagehand.action"] == "opened" && a["stagehand.pr"] != "0" && s.Service == "stagehand-prbot" {
			opened = true
		}
		if s.Name == "POST /webhook/github" && s.TraceID == "4bf92f3577b34da6a3ce929d0e0e4736" && s.ParentSpanID == "00f067aa0ba902b7" {
			receipt = true
		}
	}
	if !opened || !receipt {
		t.Errorf("promotion opened traced %v, webhook continued %v; spans: %s", opened, receipt, tracingtest.Names(recv.Spans()))
	}
}
