package promoter

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

const (
	secret = "webhook-secret"
	owner  = prbottest.Owner
	repo   = prbottest.Repo
)

var now = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) // a Tuesday

// newBot is a bot for f's repository, checking f's locks, polling fast.
func newBot(t testing.TB, f *prbottest.Fixture, opts ...prbot.Option) *prbot.Bot {
	t.Helper()
	opts = append([]prbot.Option{prbot.WithLocks(prbot.LockClient(f.LockClient, nil)), prbot.WithPollInterval(10 * time.Millisecond)}, opts...)
	b, err := prbot.New(f.GH, owner, repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// healthyAt records a successful stagehand/<env> check run on sha, completed ago before now.
func healthyAt(f *prbottest.Fixture, env, sha string, ago time.Duration) {
	f.Healthy(env, sha, now.Add(-ago))
}

// checkRunCompleted builds the check_run delivery GitHub sends when a check
// run completes, from the real example payload.
func checkRunCompleted(t *testing.T, name, sha, conclusion, id string) githubtest.Delivery {
	t.Helper()
	data, err := os.ReadFile("testdata/check_run.created.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["action"] = "completed"
	run := m["check_run"].(map[string]any)
	run["name"], run["head_sha"], run["status"], run["conclusion"] = name, sha, "completed", conclusion
	run["completed_at"] = time.Now().UTC().Format(time.RFC3339)
	run["pull_requests"] = []any{}
	r := m["repository"].(map[string]any)
	r["full_name"], r["name"] = owner+"/"+repo, repo
	r["owner"].(map[string]any)["login"] = owner
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return githubtest.Delivery{Event: "check_run", ID: id, Body: body}
}

// served runs a Server behind a webhook receiver and collects its results.
type served struct {
	url     string
	mu      sync.Mutex
	results []*prbot.PromoteResult
	errs    []error
}

func (s *served) last() (*prbot.PromoteResult, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.results) == 0 {
		return nil, 0
	}
	return s.results[len(s.results)-1], len(s.results)
}

func serve(t *testing.T, b *prbot.Bot) *served {
	t.Helper()
	out := &served{}
	srv, err := New(b, WithResync(0), WithResultHandler(func(r *prbot.PromoteResult, err error) {
		out.mu.Lock()
		defer out.mu.Unlock()
		if errors.Is(err, context.Canceled) {
			return // the test is over
		}
		if err != nil {
			out.errs = append(out.errs, err)
			return
		}
		out.results = append(out.results, r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := webhook.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv.Register(rcv)
	hs := httptest.NewServer(rcv)
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		out.mu.Lock()
		defer out.mu.Unlock()
		for _, err := range out.errs {
			t.Errorf("evaluation failed: %v", err)
		}
	})
	out.url = hs.URL
	return out
}

func send(t *testing.T, url, secret string, d githubtest.Delivery) int {
	t.Helper()
	code, body, err := githubtest.Send(context.Background(), url, secret, d)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK && code != http.StatusUnauthorized {
		t.Fatalf("webhook answered %d: %s", code, body)
	}
	return code
}

func TestServeEvaluatesOnWebhooks(t *testing.T) {
	f := prbottest.New(t, prbottest.Spread(prbottest.HealthyPipeline))
	b := newBot(t, f, prbot.WithClock(func() time.Time { return now }))
	s := serve(t, b)

	// At start: evaluated once, nothing healthy yet.
	testenv.WaitFor(t, 20*time.Second, "the first evaluation", func() bool { r, _ := s.last(); return r != nil })
	if r, _ := s.last(); r.Action != prbot.ActionNone {
		t.Fatalf("first evaluation = %+v, want nothing to do", r)
	}

	// A forged delivery is refused and changes nothing.
	head := f.Srv.Repo(owner, repo).Branch("main")
	healthyAt(f, "devel", head, time.Hour)
	if code := send(t, s.url, "wrong-secret", checkRunCompleted(t, "stagehand/devel", head, "success", "d1")); code != http.StatusUnauthorized {
		t.Errorf("forged delivery answered %d, want 401", code)
	}
	// stagehand/devel completed: the promotion becomes possible and is opened.
	send(t, s.url, secret, checkRunCompleted(t, "stagehand/devel", head, "success", "d2"))
	testenv.WaitFor(t, 20*time.Second, "the promotion pull request", func() bool { return len(f.OpenPulls()) == 1 })

	// A push to main with a new healthy devel version updates it in place.
	sha := f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/search.json": `{"services": [{"name": "search", "containers": [{"dockerTag": "0.2.0"}]}]}` + "\n"}, "bump search")
	healthyAt(f, "devel", sha, 30*time.Minute)
	send(t, s.url, secret, f.Srv.Webhooks(owner, repo).Push("main", head, sha, "someone"))
	testenv.WaitFor(t, 20*time.Second, "the update", func() bool { r, _ := s.last(); return r.Action == prbot.ActionUpdated })
	if c := f.File(t, "stagehand/promote-devel-staging", "environments/staging/manifest.json"); !strings.Contains(c, `"0.2.0"`) {
		t.Errorf("staging manifest on the branch:\n%s", c)
	}
	if prs := f.Srv.Repo(owner, repo).PullRequests(); len(prs) != 1 {
		t.Errorf("pull requests = %+v, want one", prs)
	}

	// A push to another branch is ignored.
	_, n := s.last()
	other := f.Srv.Repo(owner, repo).Commit("feature", map[string]string{"x.txt": "x"}, "feature")
	send(t, s.url, secret, f.Srv.Webhooks(owner, repo).Push("feature", sha, other, "someone"))
	send(t, s.url, secret, checkRunCompleted(t, "stagehand/devel", sha, "success", "d2")) // a duplicate delivery
	send(t, s.url, secret, checkRunCompleted(t, "stagehand/staging", sha, "success", "d4"))
	time.Sleep(50 * time.Millisecond) // nothing should happen; give the worker a chance to misbehave
	if _, m := s.last(); m != n {
		t.Errorf("%d evaluations after events that concern no promotion", m-n)
	}
}

func TestServeReevaluatesWhenSoakEnds(t *testing.T) {
	f := prbottest.New(t, prbottest.Spread(prbottest.HealthyPipeline+"    requires: {soak: 3s}\n"))
	b := newBot(t, f) // real clock: the soak ends for real
	f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: promote.CheckName("devel"), HeadSHA: f.Srv.Repo(owner, repo).Branch("main"),
		Status: "completed", Conclusion: "success", CompletedAt: time.Now()})
	s := serve(t, b)
	testenv.WaitFor(t, 20*time.Second, "the soak to end and the promotion to open", func() bool { r, _ := s.last(); return r != nil && r.Action == prbot.ActionOpened })
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.results) < 2 || len(s.results[0].Decision.Held) != 3 {
		for _, r := range s.results {
			t.Logf("result: %s %+v", r.Action, r.Decision.Held)
		}
		t.Errorf("want a soaking evaluation before the one that opened")
	}
}

func TestServeAutoMergesWhenThePullRequestsChecksPass(t *testing.T) {
	f := prbottest.New(t, prbottest.Spread("stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    autoMerge: true\n    requires: {healthy: false}\n"))
	b := newBot(t, f, prbot.WithClock(func() time.Time { return now }), prbot.WithRequiredChecks("ci/test"))
	s := serve(t, b)
	testenv.WaitFor(t, 20*time.Second, "the promotion pull request", func() bool { r, _ := s.last(); return r != nil && r.Action == prbot.ActionOpened })
	if r, _ := s.last(); r.Merged || r.Reason != "waiting for checks: ci/test (not reported yet)" {
		t.Fatalf("result = %+v, want opened and waiting for ci/test", r)
	}
	pr := f.OpenPulls()[0]
	f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: "ci/test", HeadSHA: pr.HeadSHA, Status: "completed", Conclusion: "success", CompletedAt: time.Now()})
	d := checkRunCompleted(t, "ci/test", pr.HeadSHA, "success", "ci-1")
	var m map[string]any
	if err := json.Unmarshal(d.Body, &m); err != nil {
		t.Fatal(err)
	}
	m["check_run"].(map[string]any)["pull_requests"] = []any{map[string]any{
		"url": "https://api.github.com/repos/acme/manifests/pulls/1", "id": 1, "number": 1,
		"head": map[string]any{"ref": pr.Head, "sha": pr.HeadSHA, "repo": map[string]any{"id": 1, "url": "https://api.github.com/repos/acme/manifests", "name": repo}},
		"base": map[string]any{"ref": "main", "sha": f.Srv.Repo(owner, repo).Branch("main"), "repo": map[string]any{"id": 1, "url": "https://api.github.com/repos/acme/manifests", "name": repo}},
	}}
	d.Body, _ = json.Marshal(m)
	send(t, s.url, secret, d)
	testenv.WaitFor(t, 20*time.Second, "the merge", func() bool { r, _ := s.last(); return r.Merged })
	if prs := f.Srv.Repo(owner, repo).PullRequests(); !prs[0].Merged {
		t.Errorf("pull request = %+v, want merged", prs[0])
	}
	if got := f.File(t, "main", "environments/staging/payments-api.json"); !strings.Contains(got, `"2.4.0"`) {
		t.Errorf("staging on main after the merge:\n%s", got)
	}
}

func TestServeAutoMergesWhenACommitStatusSucceeds(t *testing.T) {
	f := prbottest.New(t, prbottest.Spread("stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    autoMerge: true\n    requires: {healthy: false}\n"))
	b := newBot(t, f, prbot.WithClock(func() time.Time { return now }), prbot.WithRequiredChecks("ci/jenkins"))
	s := serve(t, b)
	testenv.WaitFor(t, 20*time.Second, "the promotion pull request", func() bool { r, _ := s.last(); return r != nil && r.Action == prbot.ActionOpened })
	pr := f.OpenPulls()[0]
	f.Srv.Repo(owner, repo).SetStatus(pr.HeadSHA, "ci/jenkins", "success")

	data, err := os.ReadFile("testdata/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["sha"], m["state"], m["context"] = pr.HeadSHA, "success", "ci/jenkins"
	m["branches"] = []any{map[string]any{"name": pr.Head, "commit": map[string]any{"sha": pr.HeadSHA, "url": "https://api.github.com/x"}, "protected": false}}
	r := m["repository"].(map[string]any)
	r["full_name"], r["name"] = owner+"/"+repo, repo
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	send(t, s.url, secret, githubtest.Delivery{Event: "status", ID: "st-1", Body: body})
	testenv.WaitFor(t, 20*time.Second, "the merge", func() bool { r, _ := s.last(); return r.Merged })
}
