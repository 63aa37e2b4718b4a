package verify_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

func newVerifier(t *testing.T) *verify.Verifier {
	t.Helper()
	v, err := verify.New(verify.WithJobPoll(100 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

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
// address or through a redirect from an allowed server; loopback and other
// addresses are reached as before.
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
			"verification request to fd00:ec2::254: link-local addresses are refused"},
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
