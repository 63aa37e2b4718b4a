package verify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestHTTPIgnoresProxyEnvironment: with HTTP_PROXY set, a request to the
// metadata address is still refused by the dialer, and never handed to the
// proxy (which would fetch it on the task's behalf). Go reads the proxy
// variables once per process, so the check runs in a child process.
func TestHTTPIgnoresProxyEnvironment(t *testing.T) {
	if os.Getenv("STAGEHAND_PROXY_CHILD") == "1" {
		rep, err := newVerifier(t).Verify(context.Background(), verify.Run{Revision: "abc"},
			[]verify.Task{mustTask(t, "metadata", `{"http": {"url": "http://169.254.169.254/latest/meta-data/", "interval": "1s", "duration": "100ms"}}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Result != verify.Fail || !strings.Contains(rep.Tasks[0].Message, "link-local addresses are refused") {
			t.Fatalf("report %s %q, want fail refusing the link-local address", rep.Result, rep.Tasks[0].Message)
		}
		return
	}
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.Write([]byte("credentials"))
	}))
	defer proxy.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHTTPIgnoresProxyEnvironment$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STAGEHAND_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child with HTTP_PROXY=%s: %v\n%s", proxy.URL, err, out)
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy was asked %d times for the metadata address", n)
	}
}
