package verify_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

func mustTask(t *testing.T, name, props string) verify.Task {
	t.Helper()
	task, err := verify.ParseTask(name, json.RawMessage(props))
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// newVerifier is a verifier whose tasks may reach this host's loopback
// addresses, where the tests serve their targets (refused by default, as a
// user's in-cluster service would be opened by verification.allowAddresses).
func newVerifier(t *testing.T, opts ...verify.Option) *verify.Verifier {
	t.Helper()
	opts = append([]verify.Option{verify.WithJobPoll(100 * time.Millisecond), verify.WithAllowedAddresses(loopback...)}, opts...)
	v, err := verify.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// TestHTTP runs http tasks against a local server whose odd-numbered
// answers (the first, third, …) on /flaky are 503s: between half and two
// thirds of two or more requests fail.
func TestHTTP(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Check") != "stagehand" {
			http.Error(w, "missing header", http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/flaky" && n.Add(1)%2 == 1 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/down" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(`{"status":"ok","version":"1.2.0"}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, props, result string
		message             []string
	}{
		{"pass", `{"http": {"url": "` + srv.URL + `/", "headers": {"X-Check": "stagehand"}, "bodyRegexp": "\"version\":\"1[.]2[.]", "interval": "20ms", "duration": "200ms"}}`,
			verify.Pass, []string{"0 of ", " requests failed (0%)"}},
		{"down", `{"http": {"url": "` + srv.URL + `/down", "headers": {"X-Check": "stagehand"}, "interval": "20ms", "duration": "100ms", "failureRatio": 0.5}}`,
			verify.Fail, []string{"requests failed (100%), above the failure ratio 50%", "/down: status 500, want 200"}},
		{"body mismatch", `{"http": {"url": "` + srv.URL + `/", "headers": {"X-Check": "stagehand"}, "bodyRegexp": "\"version\":\"2[.]", "interval": "20ms", "duration": "60ms"}}`,
			verify.Fail, []string{`body does not match "\"version\":\"2[.]"`}},
		{"flaky warns", `{"http": {"url": "` + srv.URL + `/flaky", "headers": {"X-Check": "stagehand"}, "interval": "20ms", "duration": "300ms", "failureRatio": 0.7}}`,
			verify.Warning, []string{"above the warning ratio 0%", "status 503, want 200"}},
		{"flaky fails", `{"http": {"url": "` + srv.URL + `/flaky", "headers": {"X-Check": "stagehand"}, "interval": "20ms", "duration": "300ms", "warningRatio": 0.1, "failureRatio": 0.4}}`,
			verify.Fail, []string{"above the failure ratio 40%"}},
		{"refused", `{"http": {"url": "http://127.0.0.1:1/", "interval": "20ms", "duration": "40ms"}}`,
			verify.Fail, []string{"connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Store(0)
			task := mustTask(t, tc.name, tc.props)
			rep, err := newVerifier(t).Verify(context.Background(), verify.Run{Environment: "devel", Revision: "abc"}, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Tasks) != 1 || rep.Result != tc.result || rep.Tasks[0].Result != tc.result {
				t.Fatalf("report %+v, want result %s", rep, tc.result)
			}
			for _, m := range tc.message {
				if !strings.Contains(rep.Tasks[0].Message, m) {
					t.Errorf("message %q does not say %q", rep.Tasks[0].Message, m)
				}
			}
		})
	}
}

// TestVerifyStopsAtFailure: the task after a failed one is not run, and the
// report says so; a warning does not stop the run.
func TestVerifyStopsAtFailure(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	tasks := []verify.Task{
		mustTask(t, "smoke", `{"http": {"url": "`+srv.URL+`/ok", "interval": "10ms", "duration": "10ms"}}`),
		mustTask(t, "broken", `{"http": {"url": "`+srv.URL+`/bad", "interval": "10ms", "duration": "10ms"}}`),
		mustTask(t, "later", `{"http": {"url": "`+srv.URL+`/later", "interval": "10ms", "duration": "10ms"}}`),
	}
	var heard []string
	rep, err := newVerifier(t).Verify(context.Background(), verify.Run{Revision: "abc"}, tasks, func(tr verify.TaskResult) { heard = append(heard, tr.Name+" "+tr.Result) })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result != verify.Fail || len(rep.Tasks) != 2 || rep.Revision != "abc" {
		t.Fatalf("report %+v: want fail after two tasks", rep)
	}
	if want := "task broken (http) failed: "; !strings.HasPrefix(rep.Message, want) || !strings.HasSuffix(rep.Message, "; not run: later") {
		t.Errorf("message %q", rep.Message)
	}
	if strings.Join(heard, ",") != "smoke pass,broken fail" {
		t.Errorf("done heard %v", heard)
	}
	if rep.FinishedAt.Before(rep.Started) {
		t.Errorf("finished %v before started %v", rep.FinishedAt, rep.Started)
	}
}

// TestTimeout: a task that outlives its timeout fails saying so, and a
// cancelled run returns the context's error.
func TestTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	task := mustTask(t, "slow", `{"timeout": "300ms", "http": {"url": "`+srv.URL+`", "interval": "1s", "duration": "200ms"}}`)
	rep, err := newVerifier(t).Verify(context.Background(), verify.Run{}, []verify.Task{task}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result != verify.Fail || !strings.Contains(rep.Tasks[0].Message, "timed out after 300ms") {
		t.Errorf("report %+v: want a timeout failure", rep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	task.Timeout = time.Minute
	if rep, err := newVerifier(t).Verify(ctx, verify.Run{}, []verify.Task{task}, nil); err == nil || rep.Result != verify.Fail {
		t.Errorf("cancelled run: %+v, %v; want fail and an error", rep, err)
	}
}

// TestHTTPRefusesLinkLocal: an http or prometheus task cannot reach the cloud
// metadata services (which hand out the node's and pod's credentials), by
// address or through a redirect from an allowed server; an opened loopback
// range is reached.
func TestHTTPRefusesLinkLocal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/to-metadata" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	for _, tc := range []struct{ name, props, result, message string }{
		{"metadata", `{"http": {"url": "http://169.254.169.254/latest/meta-data/", "interval": "1s", "duration": "100ms"}}`, verify.Fail,
			"GET http://169.254.169.254/latest/meta-data/: Get \"http://169.254.169.254/latest/meta-data/\": dial tcp 169.254.169.254:80: verification request to 169.254.169.254: link-local addresses are refused (cloud instance metadata lives there)"},
		{"ECS credentials", `{"http": {"url": "http://169.254.170.2/v2/credentials", "interval": "1s", "duration": "100ms"}}`, verify.Fail,
			"verification request to 169.254.170.2: link-local addresses are refused"},
		{"EC2 IPv6 metadata", `{"http": {"url": "http://[fd00:ec2::254]/latest/meta-data/", "interval": "1s", "duration": "100ms"}}`, verify.Fail,
			"verification request to fd00:ec2::254: cloud metadata addresses are refused (EC2's IPv6 instance metadata)"},
		{"IPv6 link-local", `{"http": {"url": "http://[fe80::1]:8080/", "interval": "1s", "duration": "100ms"}}`, verify.Fail,
			"verification request to fe80::1: link-local addresses are refused"},
		{"redirect to metadata", `{"http": {"url": "` + srv.URL + `/to-metadata", "interval": "1s", "duration": "100ms"}}`, verify.Fail,
			"verification request to 169.254.169.254: link-local addresses are refused"},
		{"prometheus at metadata", `{"prometheus": {"address": "http://169.254.169.254", "query": "up", "op": ">", "threshold": 0, "interval": "1s", "duration": "100ms"}}`, verify.Fail,
			"verification request to 169.254.169.254: link-local addresses are refused"},
		{"loopback", `{"http": {"url": "` + srv.URL + `/", "interval": "1s", "duration": "100ms"}}`, verify.Pass, "0 of 1 requests failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			rep, err := newVerifier(t).Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{mustTask(t, tc.name, tc.props)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.result || !strings.Contains(rep.Tasks[0].Message, tc.message) {
				t.Errorf("report %s %q, want %s saying %q", rep.Result, rep.Tasks[0].Message, tc.result, tc.message)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s: a refusal is immediate", took)
			}
		})
	}
}

// TestHTTPRefusesLoopbackAndMetadata: by default an http or prometheus task
// reaches neither this host (loopback, the unspecified address, also by a
// name that resolves there) nor the metadata services outside the
// link-local ranges (fd20:ce::254, 100.100.100.200, also through a
// redirect), whatever the method and headers; a range given to
// WithAllowedAddresses is reached.
func TestHTTPRefusesLoopbackAndMetadata(t *testing.T) {
	var hits atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-gce":
			http.Redirect(w, r, "http://[fd20:ce::254]/computeMetadata/v1/instance/service-accounts/default/token", http.StatusFound)
		case "/to-alibaba":
			http.Redirect(w, r, "http://100.100.100.200/latest/meta-data/ram/security-credentials/", http.StatusTemporaryRedirect)
		default:
			hits.Add(1)
			w.Write([]byte("ok"))
		}
	})
	srv := httptest.NewServer(handler)
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	var srv6 *httptest.Server
	if l, err := net.Listen("tcp", "[::1]:0"); err == nil {
		srv6 = &httptest.Server{Listener: l, Config: &http.Server{Handler: handler}}
		srv6.Start()
		defer srv6.Close()
	}
	allowed, err := verify.New(verify.WithAllowedAddresses(loopback...))
	if err != nil {
		t.Fatal(err)
	}
	strict, err := verify.New()
	if err != nil {
		t.Fatal(err)
	}
	prom := func(addr string) string {
		return `{"prometheus": {"address": "` + addr + `", "query": "up", "op": ">", "threshold": 0, "interval": "1s", "duration": "100ms"}}`
	}
	type tc struct{ name, props, message string }
	cases := []tc{
		{"127.0.0.1", `{"http": {"url": "` + srv.URL + `/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to 127.0.0.1: loopback addresses are refused (the reconciler's own host); only an allowed range opens it"},
		{"127.0.0.1 with another method and headers", `{"http": {"url": "` + srv.URL + `/", "method": "POST", "headers": {"Metadata-Flavor": "Google", "X-aws-ec2-metadata-token": "x"}, "interval": "1s", "duration": "100ms"}}`,
			"loopback addresses are refused"},
		{"127.1.2.3", `{"http": {"url": "http://127.1.2.3:` + port + `/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to 127.1.2.3: loopback addresses are refused"},
		{"localhost, resolved", `{"http": {"url": "http://localhost:` + port + `/", "interval": "1s", "duration": "100ms"}}`,
			"loopback addresses are refused"},
		{"0.0.0.0", `{"http": {"url": "http://0.0.0.0:` + port + `/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to 0.0.0.0: unspecified addresses are refused"},
		{"[::]", `{"http": {"url": "http://[::]:` + port + `/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to ::: unspecified addresses are refused"},
		{"IPv4-mapped 127.0.0.1", `{"http": {"url": "http://[::ffff:127.0.0.1]:` + port + `/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to 127.0.0.1: loopback addresses are refused"},
		{"GCE IPv6 metadata", `{"http": {"url": "http://[fd20:ce::254]/computeMetadata/v1/", "headers": {"Metadata-Flavor": "Google"}, "interval": "1s", "duration": "100ms"}}`,
			"verification request to fd20:ce::254: cloud metadata addresses are refused (Google Compute Engine's IPv6 metadata server)"},
		{"Alibaba metadata", `{"http": {"url": "http://100.100.100.200/latest/meta-data/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to 100.100.100.200: cloud metadata addresses are refused (Alibaba Cloud's instance metadata)"},
		{"prometheus on loopback", prom(srv.URL), "verification request to 127.0.0.1: loopback addresses are refused"},
		{"prometheus at Alibaba metadata", prom("http://100.100.100.200"), "verification request to 100.100.100.200: cloud metadata addresses are refused"},
	}
	if srv6 != nil {
		cases = append(cases, tc{"[::1]", `{"http": {"url": "` + srv6.URL + `/", "interval": "1s", "duration": "100ms"}}`,
			"verification request to ::1: loopback addresses are refused"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits.Store(0)
			rep, err := strict.Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{mustTask(t, "smoke", c.props)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != verify.Fail || !strings.Contains(rep.Tasks[0].Message, c.message) {
				t.Errorf("report %s %q, want fail saying %q", rep.Result, rep.Tasks[0].Message, c.message)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the server was reached %d times", n)
			}
		})
	}

	// Redirects from an allowed server: each connection is checked where it goes.
	for _, c := range []tc{
		{"redirect to GCE IPv6 metadata", `{"http": {"url": "` + srv.URL + `/to-gce", "interval": "1s", "duration": "100ms"}}`,
			"verification request to fd20:ce::254: cloud metadata addresses are refused"},
		{"redirect to Alibaba metadata", `{"http": {"url": "` + srv.URL + `/to-alibaba", "method": "PUT", "interval": "1s", "duration": "100ms"}}`,
			"verification request to 100.100.100.200: cloud metadata addresses are refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := allowed.Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{mustTask(t, "smoke", c.props)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != verify.Fail || !strings.Contains(rep.Tasks[0].Message, c.message) {
				t.Errorf("report %s %q, want fail saying %q", rep.Result, rep.Tasks[0].Message, c.message)
			}
		})
	}

	// Opened: the loopback range is reached, over IPv4, IPv6 and by name.
	open := []string{srv.URL + "/", "http://localhost:" + port + "/"}
	if srv6 != nil {
		open = append(open, srv6.URL+"/")
	}
	for _, u := range open {
		t.Run("allowed "+u, func(t *testing.T) {
			rep, err := allowed.Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{mustTask(t, "smoke", `{"http": {"url": "`+u+`", "interval": "1s", "duration": "100ms"}}`)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != verify.Pass {
				t.Errorf("report %s %q, want pass", rep.Result, rep.Tasks[0].Message)
			}
		})
	}
}
