package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/github"
	"github.com/stagehand-gitops/stagehand/internal/github/preview"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// gatedPreviewer is previewer{} held back: every preview says it started, then waits for release (or its
// context).
type gatedPreviewer struct {
	next    github.Previewer
	started chan string // head SHAs, in the order their previews started
	release chan struct{}
}

func newGate(next github.Previewer) *gatedPreviewer {
	return &gatedPreviewer{next: next, started: make(chan string, 1000), release: make(chan struct{})}
}

func (p *gatedPreviewer) Preview(ctx context.Context, ref, sha string) ([]github.Preview, error) {
	p.started <- sha
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.next.Preview(ctx, ref, sha)
}

// errs collects what OnPreviewError receives.
type errs struct {
	mu   sync.Mutex
	list []string
}

func (e *errs) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, err.Error())
}

func (e *errs) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

// metric returns the value of the handler's collector named name.
func metric(t *testing.T, h *github.Handler, name string) float64 {
	t.Helper()
	for _, c := range h.Collectors() {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		if strings.Contains((<-ch).String(), `"`+name+`"`) {
			return testutil.ToFloat64(c)
		}
	}
	t.Fatalf("no collector %s", name)
	return 0
}

// previewRuns counts the preview check runs by head SHA.
func previewRuns(f *fixture) map[string]int {
	n := map[string]int{}
	for _, r := range f.srv.Repo(owner, repo).CheckRuns() {
		if strings.HasSuffix(r.Name, " preview") && r.Status == "completed" {
			n[r.HeadSHA]++
		}
	}
	return n
}

// openPRs opens n pull requests, each from its own branch with one commit, and returns their numbers.
func openPRs(f *fixture, n int) []int {
	var prs []int
	for i := range n {
		branch := fmt.Sprintf("pr-%02d", i)
		f.srv.Repo(owner, repo).Commit(branch, map[string]string{"environments/prod/api.json": fmt.Sprintf(`{"v": %d}`, i)}, "first")
		prs = append(prs, f.srv.Repo(owner, repo).OpenPullRequest(branch, "main", "Bump "+branch, "maria"))
	}
	return prs
}

func deliver(t *testing.T, f *fixture, h *github.Handler, pr int, action string) {
	t.Helper()
	if err := h.HandlePullRequest(context.Background(), f.srv.Webhooks(owner, repo).PullRequest(pr, action, "maria").Body); err != nil {
		t.Fatalf("PR #%d %s: %v", pr, action, err)
	}
}

func TestPreviewQueueNewestHeadPerPR(t *testing.T) {
	f := newFixture(t)
	gate := newGate(previewer{})
	h := newHandler(t, f.client, newDecider(), gate)
	prs := openPRs(f, 20)
	answered := 0
	for _, pr := range prs {
		deliver(t, f, h, pr, "opened")
		answered++
	}
	<-gate.started // the first preview runs, and is held back
	// Every PR moves to a second head while the first preview is still held: each answer comes back
	// without waiting for any preview.
	newest := map[string]bool{}
	for i, pr := range prs {
		branch := fmt.Sprintf("pr-%02d", i)
		newest[f.srv.Repo(owner, repo).Commit(branch, map[string]string{"environments/prod/api.json": fmt.Sprintf(`{"v": %d}`, 100+i)}, "second")] = true
		deliver(t, f, h, pr, "synchronize")
		answered++
	}
	if depth := metric(t, h, "stagehand_github_preview_queue_depth"); depth > 20 {
		t.Errorf("queue depth %v with 20 pull requests, want at most 20", depth)
	}
	if got := previewRuns(f); len(got) != 0 {
		t.Fatalf("previews published while held back: %v", got)
	}
	if answered != 40 {
		t.Fatalf("%d webhook answers, want 40", answered)
	}
	close(gate.release)
	h.Wait()
	got := previewRuns(f)
	want := map[string]int{}
	for sha := range newest {
		want[sha] = 2 // devel and prod
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("preview runs by head: exactly one per environment on each PR's newest head (-want +got):\n%s", diff)
	}
	if depth := metric(t, h, "stagehand_github_preview_queue_depth"); depth != 0 {
		t.Errorf("queue depth %v once idle", depth)
	}
}

func TestPreviewQueueFullDropsTheOldest(t *testing.T) {
	f := newFixture(t)
	gate := newGate(previewer{})
	var e errs
	h := newHandler(t, f.client, newDecider(), gate, github.WithPreviewQueueSize(3), github.OnPreviewError(e.add))
	prs := openPRs(f, 6)
	deliver(t, f, h, prs[0], "opened")
	<-gate.started // #1 runs; #2..#6 wait in a queue of 3
	for _, pr := range prs[1:] {
		deliver(t, f, h, pr, "opened")
	}
	if depth := metric(t, h, "stagehand_github_preview_queue_depth"); depth != 3 {
		t.Errorf("queue depth %v, want 3", depth)
	}
	if dropped := metric(t, h, "stagehand_github_previews_dropped_total"); dropped != 2 {
		t.Errorf("%v previews dropped, want 2", dropped)
	}
	close(gate.release)
	h.Wait()
	var previewed []int
	for i, pr := range prs {
		if previewRuns(f)[f.srv.Repo(owner, repo).Branch(fmt.Sprintf("pr-%02d", i))] == 2 {
			previewed = append(previewed, pr)
		}
	}
	if diff := cmp.Diff([]int{prs[0], prs[3], prs[4], prs[5]}, previewed); diff != "" {
		t.Errorf("previewed PRs: the running one and the 3 newest (-want +got):\n%s", diff)
	}
	want := []string{
		fmt.Sprintf("preview queue full (3 pull requests): dropped the preview of PR #%d head %s", prs[1], f.srv.Repo(owner, repo).Branch("pr-01")[:7]),
		fmt.Sprintf("preview queue full (3 pull requests): dropped the preview of PR #%d head %s", prs[2], f.srv.Repo(owner, repo).Branch("pr-02")[:7]),
	}
	if diff := cmp.Diff(want, e.get()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// stuck never finishes a preview before its context ends.
type stuck struct{}

func (stuck) Preview(ctx context.Context, _, _ string) ([]github.Preview, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("fetching branch: %w", ctx.Err())
}

func TestPreviewQueueDeadline(t *testing.T) {
	f := newFixture(t)
	var e errs
	h := newHandler(t, f.client, newDecider(), stuck{}, github.WithPreviewTimeout(50*time.Millisecond), github.OnPreviewError(e.add))
	prs := openPRs(f, 1)
	deliver(t, f, h, prs[0], "opened")
	h.Wait()
	got := e.get()
	if len(got) != 1 || !strings.Contains(got[0], "not done within 50ms (the preview timeout)") || !strings.Contains(got[0], "deadline exceeded") {
		t.Errorf("errors: %q", got)
	}
}

// previewRepo is a real git server holding the manifests, mirrored into the fixture's githubtest so that
// preview check runs can be created on its commits, with a BranchPreviewer whose planner only names the
// revision (no cluster here: the queue and the caches are under test).
type previewRepo struct {
	git   *gitserver.Server
	cache string
	bp    *preview.BranchPreviewer
}

func newPreviewRepo(t *testing.T) *previewRepo {
	t.Helper()
	r := &previewRepo{git: gitserver.New(t), cache: t.TempDir()}
	url := r.git.Init(t, "manifests")
	planFn := func(_ context.Context, s gitsource.Snapshot, env string) (*reconcile.Plan, error) {
		return plan(env, s.Revision, 1), nil
	}
	r.bp = branchPreviewer(t, config.Source{URL: url, Branch: "main", CacheDir: r.cache}, []string{"prod"}, planFn)
	return r
}

// push commits to branch in git and githubtest alike, and opens a PR for it unless pr is set.
func (r *previewRepo) push(t *testing.T, f *fixture, branch string) string {
	t.Helper()
	files := map[string]string{"environments/prod/manifest.json": `{"services": []}`, "n": time.Now().String()}
	sha := r.git.Repo("manifests").Commit(t, branch, files, "change")
	f.srv.Repo(owner, repo).MirrorCommit(branch, sha, files, "change")
	return sha
}

func exists(dir string) bool {
	_, err := os.Stat(dir)
	return err == nil
}

func TestPreviewCacheRemovedWhenThePRCloses(t *testing.T) {
	f := newFixture(t)
	r := newPreviewRepo(t)
	var e errs
	h := newHandler(t, f.client, newDecider(), r.bp, github.OnPreviewError(e.add))
	head := r.push(t, f, "bump")
	pr := f.srv.Repo(owner, repo).OpenPullRequest("bump", "main", "Bump", "maria")
	deliver(t, f, h, pr, "opened")
	h.Wait()
	if got := previewRuns(f)[head]; got != 1 {
		t.Fatalf("%d preview runs on the head, want 1; errors: %q", got, e.get())
	}
	dir, err := r.bp.CacheDir("bump")
	if err != nil {
		t.Fatal(err)
	}
	if !exists(dir) || !strings.HasPrefix(dir, filepath.Join(r.cache, "previews")) {
		t.Fatalf("no preview cache at %s", dir)
	}
	deliver(t, f, h, pr, "closed")
	h.Wait()
	if exists(dir) {
		t.Errorf("preview cache %s still there after the PR closed", dir)
	}
	if got := e.get(); len(got) != 0 {
		t.Errorf("errors: %q", got)
	}
}

func TestPreviewCacheSweptByAge(t *testing.T) {
	f := newFixture(t)
	r := newPreviewRepo(t)
	var e errs
	h := newHandler(t, f.client, newDecider(), r.bp, github.WithPreviewCacheAge(time.Hour), github.OnPreviewError(e.add))
	stale := filepath.Join(r.cache, "previews", "0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(stale, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	r.push(t, f, "bump")
	pr := f.srv.Repo(owner, repo).OpenPullRequest("bump", "main", "Bump", "maria")
	deliver(t, f, h, pr, "opened")
	h.Wait() // the worker went idle: it swept
	if exists(stale) {
		t.Errorf("stale cache %s survived the sweep", stale)
	}
	if dir, _ := r.bp.CacheDir("bump"); !exists(dir) {
		t.Errorf("the fresh cache %s was swept", dir)
	}
	if got := e.get(); len(got) != 0 {
		t.Errorf("errors: %q", got)
	}
}

func TestPullRequestDeliveryAfterStopPreviews(t *testing.T) {
	f := newFixture(t)
	h := newHandler(t, f.client, newDecider(), previewer{})
	h.StopPreviews()
	prs := openPRs(f, 1)
	deliver(t, f, h, prs[0], "opened")
	h.Wait()
	if got := previewRuns(f); len(got) != 0 {
		t.Errorf("previews after StopPreviews: %v", got)
	}
}

func BenchmarkPreviewQueue20(b *testing.B) {
	f := newFixtureWith(b, nil)
	var prs []int
	for i := range 20 {
		branch := fmt.Sprintf("pr-%02d", i)
		f.srv.Repo(owner, repo).Commit(branch, map[string]string{"a.json": "{}"}, "first")
		prs = append(prs, f.srv.Repo(owner, repo).OpenPullRequest(branch, "main", branch, "maria"))
	}
	bodies := make([][]byte, len(prs))
	for i, pr := range prs {
		bodies[i] = f.srv.Webhooks(owner, repo).PullRequest(pr, "opened", "maria").Body
	}
	var failed error
	h, err := github.NewHandler(f.client, newDecider(), "main", github.WithPreviewer(previewer{}), github.OnPreviewError(func(err error) { failed = errors.Join(failed, err) }))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		for _, body := range bodies {
			if err := h.HandlePullRequest(ctx, body); err != nil {
				b.Fatal(err)
			}
		}
		h.Wait() // all 20 previews published
	}
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
}

func TestFlowSlowPreviewDoesNotDelayAnApply(t *testing.T) {
	f := newFlow(t)
	var gate *gatedPreviewer
	f.wrapPreview = func(p github.Previewer) github.Previewer {
		gate = newGate(p)
		return gate
	}
	sha := f.commit("1.0.1")
	f.start()
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "1.0.2"}]}]}`}
	head := f.git.Repo("manifests").Commit(t, "bump-api", files, "api 1.0.2")
	f.gh.Repo(owner, repo).MirrorCommit("bump-api", head, files, "api 1.0.2")
	n := f.gh.Repo(owner, repo).OpenPullRequest("bump-api", "main", "Bump api to 1.0.2", "maria")
	// The webhook is answered while its preview is held back...
	if code := f.send(f.gh.Webhooks(owner, repo).PullRequest(n, "opened", "maria"), secret); code != http.StatusOK {
		t.Fatalf("pull_request delivery: %d", code)
	}
	if got := <-gate.started; got != head {
		t.Fatalf("preview of %s started, want the PR head %s", got, head)
	}
	// ...and main's plan is proposed, approved and applied while the preview still waits.
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success"))
	for _, r := range f.gh.Repo(owner, repo).CheckRuns() {
		if r.HeadSHA == head {
			t.Fatalf("preview published before it was released: %+v", r)
		}
	}
	close(gate.release)
	if p := f.waitPreview(head); p.Conclusion != "neutral" || !strings.Contains(p.Summary, "`1.0.1` → `1.0.2`") {
		t.Errorf("preview after the apply: %s %q\n%s", p.Conclusion, p.Title, p.Summary)
	}
}

func TestBranchPreviewerOnePreviewPerBranchCache(t *testing.T) {
	f := newFixture(t)
	r := newPreviewRepo(t)
	head := r.push(t, f, "bump")
	var mu sync.Mutex
	inside, most := 0, 0
	planFn := func(_ context.Context, s gitsource.Snapshot, env string) (*reconcile.Plan, error) {
		mu.Lock()
		inside++
		most = max(most, inside)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		inside--
		mu.Unlock()
		return plan(env, s.Revision, 1), nil
	}
	src := config.Source{URL: r.git.RepoURL("manifests"), Branch: "main", CacheDir: r.cache}
	bp := branchPreviewer(t, src, []string{"prod"}, planFn)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			got, err := bp.Preview(context.Background(), "bump", head)
			if err != nil || len(got) != 1 || got[0].Plan == nil {
				t.Errorf("Preview: %v, %+v", err, got)
			}
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d previews of one branch used its cache at once, want 1", most)
	}
}

func TestPreviewWorkers(t *testing.T) {
	f := newFixture(t)
	gate := newGate(previewer{})
	h := newHandler(t, f.client, newDecider(), gate, github.WithPreviewWorkers(2))
	prs := openPRs(f, 3)
	for _, pr := range prs {
		deliver(t, f, h, pr, "opened")
	}
	// Two previews run at once, both held back; the third waits for a worker.
	<-gate.started
	<-gate.started
	if depth := metric(t, h, "stagehand_github_preview_queue_depth"); depth != 1 {
		t.Errorf("queue depth %v with 2 workers busy and 3 PRs, want 1", depth)
	}
	close(gate.release)
	h.Wait()
	if got := len(previewRuns(f)); got != 3 {
		t.Errorf("%d heads previewed, want 3", got)
	}
	for _, opt := range []github.Option{github.WithPreviewWorkers(0), github.WithPreviewTimeout(0), github.WithPreviewQueueSize(0), github.WithPreviewCacheAge(-time.Second)} {
		if _, err := github.NewHandler(f.client, newDecider(), "main", github.WithPreviewer(previewer{}), opt); err == nil {
			t.Error("a bad preview option was accepted")
		}
	}
}

// TestPreviewQueueIgnoresALateOlderDelivery: GitHub delivered (or someone
// redelivered) the event of a PR's first head after the one of its second
// head; the second head's preview is neither cancelled nor replaced.
func TestPreviewQueueIgnoresALateOlderDelivery(t *testing.T) {
	f := newFixture(t)
	gate := newGate(previewer{})
	h := newHandler(t, f.client, newDecider(), gate)
	pr := openPRs(f, 1)[0]
	first := f.srv.Webhooks(owner, repo).PullRequest(pr, "opened", "maria").Body
	if err := h.HandlePullRequest(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	<-gate.started
	second := f.srv.Repo(owner, repo).Commit("pr-00", map[string]string{"environments/prod/api.json": `{"v": 2}`}, "second")
	var ev map[string]any
	next := f.srv.Webhooks(owner, repo).PullRequest(pr, "synchronize", "maria").Body
	if err := json.Unmarshal(next, &ev); err != nil {
		t.Fatal(err)
	}
	// The newer delivery says the PR was updated a minute after the first.
	ev["pull_request"].(map[string]any)["updated_at"] = time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	if next, _ = json.Marshal(ev); next == nil {
		t.Fatal("re-encoding the delivery")
	}
	if err := h.HandlePullRequest(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if sha := <-gate.started; sha != second {
		t.Fatalf("preview started for %s, want the second head %s", sha, second)
	}
	if err := h.HandlePullRequest(context.Background(), first); err != nil { // the late one
		t.Fatal(err)
	}
	close(gate.release)
	h.Wait()
	if diff := cmp.Diff(map[string]int{second: 2}, previewRuns(f)); diff != "" {
		t.Errorf("preview runs by head (-want +got):\n%s", diff)
	}
}

// branchPreviewer is the PR previewer of src as `reconciler run` builds it: its branches' sources from
// internal/wire's Builder.
func branchPreviewer(t *testing.T, src config.Source, envs []string, plan preview.PlanFunc) *preview.BranchPreviewer {
	t.Helper()
	b, err := wire.New(&config.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return preview.New(src.CacheDir, envs, plan, b.BranchSource)
}
