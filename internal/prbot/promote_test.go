package prbot

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

var now = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) // a Tuesday

const healthyPipeline = prbottest.HealthyPipeline

// healthyAt records a successful stagehand/<env> check run on sha, completed ago before now.
func healthyAt(f *fixture, env, sha string, ago time.Duration) {
	f.Healthy(env, sha, now.Add(-ago))
}

// stage resolves an environment from the repository's files at ref.
func (f *fixture) stage(t *testing.T, ref, env string) *manifest.Environment {
	t.Helper()
	fsys := fstest.MapFS{}
	for p, c := range f.Srv.Repo(owner, repo).Files(ref) {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	e, err := manifest.Resolve(t.Context(), manifest.Repo{FS: fsys, Root: "."}, env)
	if err != nil {
		t.Fatalf("resolving %s at %s: %v", env, ref, err)
	}
	return e
}

func TestPromoteSeveralServicesInSeveralFiles(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline))
	b := f.bot(t, WithClock(func() time.Time { return now }))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || res.PR != 1 || res.Branch != "stagehand/promote-devel-staging" {
		t.Fatalf("result = %+v, want PR 1 opened on stagehand/promote-devel-staging", res)
	}
	if diff := cmp.Diff([]string{"environments/staging/checkout-api.json", "environments/staging/manifest.json", "environments/staging/payments-api.json"}, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// Staging on the branch now runs what devel runs.
	if d := promote.Diff(f.stage(t, "main", "devel"), f.stage(t, res.Branch, "staging")); len(d) != 0 {
		t.Errorf("after the promotion staging still differs: %+v", d)
	}
	// Each edit touched only its values.
	if diff := cmp.Diff([]string{
		`-        {"name": "payments-api", "containers": [{"dockerTag": "2.3.0"}]}`,
		`+        {"name": "payments-api", "containers": [{"dockerTag": "2.4.0"}]}`,
	}, changedLines(t, prbottest.Spread("")["environments/staging/payments-api.json"], f.File(t, res.Branch, "environments/staging/payments-api.json"))); diff != "" {
		t.Errorf("payments-api.json diff (-want +got):\n%s", diff)
	}
	pr := f.OpenPulls()[0]
	if want := "Promote devel → staging: checkout-api 1.5.0, payments-api 2.4.0, search 0.1.0"; pr.Title != want {
		t.Errorf("title = %q, want %q", pr.Title, want)
	}
	for _, want := range []string{
		"[1.4.0...1.5.0](https://github.com/acme/checkout-api/compare/1.4.0...1.5.0)",
		"[2.3.0...2.4.0](https://github.com/acme/payments-api/compare/2.3.0...2.4.0)",
		"### search (new in staging)",
		"Healthy in devel: [stagehand/devel]",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}

	// Evaluating again changes nothing.
	head := f.Srv.Repo(owner, repo).Branch(res.Branch)
	res, err = b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionUnchanged || res.PR != 1 || f.Srv.Repo(owner, repo).Branch(res.Branch) != head {
		t.Errorf("re-run = %+v, want PR 1 unchanged", res)
	}

	// A newer healthy devel version updates the same pull request in place.
	sha := f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/search.json": `{"services": [{"name": "search", "containers": [{"dockerTag": "0.2.0"}]}]}` + "\n"}, "bump search")
	healthyAt(f, "devel", sha, 30*time.Minute)
	res, err = b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionUpdated || res.PR != 1 {
		t.Errorf("after a new devel version = %+v, want PR 1 updated", res)
	}
	if got := f.File(t, res.Branch, "environments/staging/manifest.json"); !strings.Contains(got, `"0.2.0"`) {
		t.Errorf("staging manifest on the branch:\n%s", got)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 1 {
		t.Errorf("%d pull requests, want 1", n)
	}
}

func TestPromoteClosesWhenNothingIsLeft(t *testing.T) {
	ctx := context.Background()
	files := prbottest.Spread(healthyPipeline)
	f := newFixture(t, files)
	b := f.bot(t, WithClock(func() time.Time { return now }))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)
	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil || res.Action != ActionOpened {
		t.Fatalf("Promote = %+v, %v; want opened", res, err)
	}
	// Someone promotes by hand on main: staging now equals devel.
	manual := map[string]string{}
	for _, name := range res.Files {
		manual[name] = f.File(t, res.Branch, name)
	}
	sha := f.Srv.Repo(owner, repo).Commit("main", manual, "promote by hand")
	healthyAt(f, "devel", sha, time.Minute)

	res, err = b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionClosed || res.Reason != "devel and staging run the same versions" {
		t.Errorf("result = %+v, want closed", res)
	}
	if prs := f.Srv.Repo(owner, repo).PullRequests(); len(prs) != 1 || prs[0].State != "closed" || prs[0].Merged {
		t.Errorf("pull requests = %+v, want PR 1 closed unmerged", prs)
	}
	comments := f.Srv.Repo(owner, repo).Comments(1)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "Nothing left to promote from devel to staging") {
		t.Errorf("comments = %+v, want one saying why it was closed", comments)
	}
	if f.Srv.Repo(owner, repo).Branch(res.Branch) != "" {
		t.Error("the promotion branch outlived its pull request")
	}
	// And with nothing open, nothing happens.
	res, err = b.Promote(ctx, "devel", "staging", false)
	if err != nil || res.Action != ActionNone || res.PR != 0 {
		t.Errorf("Promote = %+v, %v; want nothing", res, err)
	}
}

func TestPromoteGatesNotMet(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline))
	b := f.bot(t, WithClock(func() time.Time { return now }), WithHistoryDepth(3))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour) // too old: three newer commits follow
	for _, tag := range []string{"0.2.0", "0.3.0", "0.4.0"} {
		f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/search.json": `{"services": [{"name": "search", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"}, "bump search")
	}
	head := f.Srv.Repo(owner, repo).Branch("main")
	f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: "stagehand/devel", HeadSHA: head, Status: "completed", Conclusion: "failure", CompletedAt: now})

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	want := "nothing ready: checkout-api: not healthy: no successful stagehand/devel check run on the 3 newest commit(s); " +
		"payments-api: not healthy: no successful stagehand/devel check run on the 3 newest commit(s); " +
		"search: not healthy: no successful stagehand/devel check run on the 3 newest commit(s)"
	if res.Action != ActionNone || res.Reason != want {
		t.Errorf("result = %+v\nwant action none, reason %q", res, want)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Errorf("%d pull requests opened, want none", n)
	}
}

func TestPromoteSoak(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline+"    requires: {soak: 1h}\n"))
	clock := now
	b := f.bot(t, WithClock(func() time.Time { return clock }))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), 10*time.Minute)

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionNone || len(res.Decision.Held) != 3 || !res.Decision.Held[0].Until.Equal(now.Add(50*time.Minute)) {
		t.Errorf("while soaking = %+v, want nothing opened, 3 held until %s", res, now.Add(50*time.Minute))
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Fatalf("%d pull requests opened while soaking", n)
	}
	clock = now.Add(50 * time.Minute)
	res, err = b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || len(res.Decision.Changes) != 3 {
		t.Errorf("after the soak = %+v, want opened with 3 services", res)
	}
}

func TestPromoteWindowClosed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline+"    window: {schedule: \"0 9 * * 1-5\", duration: 2h}\n"))
	clock := now.Add(-2 * time.Hour) // 08:00
	b := f.bot(t, WithClock(func() time.Time { return clock }))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), 3*time.Hour)

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionBlocked || !strings.Contains(res.Reason, "is closed; it opens at 2026-11-24T09:00:00Z") {
		t.Errorf("outside the window = %+v, want blocked until 09:00", res)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Fatalf("%d pull requests opened outside the window", n)
	}
	clock = now // 10:00, inside
	if res, err = b.Promote(ctx, "devel", "staging", false); err != nil || res.Action != ActionOpened {
		t.Errorf("inside the window = %+v, %v; want opened", res, err)
	}
}

func TestPromoteTargetLocked(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline))
	b := f.bot(t, WithClock(func() time.Time { return now }))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)
	f.Lock(t, "apps")

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionBlocked || !strings.Contains(res.Reason, "stage staging is locked: apps is locked until") {
		t.Errorf("locked = %+v, want blocked by the lock on apps", res)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Fatalf("%d pull requests opened into a locked stage", n)
	}
	// No pull request to comment on: a neutral check run on main says why,
	// written once however often the blocked promotion is evaluated.
	if _, err := b.Promote(ctx, "devel", "staging", false); err != nil {
		t.Fatal(err)
	}
	mainHead := f.Srv.Repo(owner, repo).Branch("main")
	notes := blockedNotes(f)
	if len(notes) != 1 || notes[0].HeadSHA != mainHead || notes[0].Status != "completed" || notes[0].Conclusion != "neutral" ||
		notes[0].Updates != 0 || !strings.Contains(notes[0].Summary, "Not opening a promotion from devel to staging: stage staging is locked: apps is locked until") {
		t.Errorf("check runs stagehand/promote-devel-staging = %+v, want one neutral run on main %s saying why", notes, mainHead)
	}

	// With a promotion already open, a lock leaves it untouched and says why on it.
	f.Unlock(t, "apps")
	if res, err = b.Promote(ctx, "devel", "staging", false); err != nil || res.Action != ActionOpened {
		t.Fatalf("unlocked = %+v, %v; want opened", res, err)
	}
	if notes := blockedNotes(f); len(notes) != 1 || notes[0].Conclusion != "neutral" || notes[0].Summary != "No lock or window blocks the promotion from devel to staging any more." {
		t.Errorf("check runs stagehand/promote-devel-staging after unlocking = %+v, want the note cleared", notes)
	}
	branchHead := f.Srv.Repo(owner, repo).Branch(res.Branch)
	sha := f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/search.json": `{"services": [{"name": "search", "containers": [{"dockerTag": "0.2.0"}]}]}` + "\n"}, "bump search")
	healthyAt(f, "devel", sha, time.Minute)
	f.Lock(t, "apps/staging")
	res, err = b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionBlocked || f.Srv.Repo(owner, repo).Branch(res.Branch) != branchHead {
		t.Errorf("locked with an open PR = %+v, want blocked and the branch untouched", res)
	}
	comments := f.Srv.Repo(owner, repo).Comments(1)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "Not updating or merging this promotion: stage staging is locked: apps/staging is locked until") {
		t.Errorf("comments = %+v, want one about the lock", comments)
	}
	// Blocked again: the same comment, not a second one.
	if _, err := b.Promote(ctx, "devel", "staging", false); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Srv.Repo(owner, repo).Comments(1)); n != 1 {
		t.Errorf("%d comments after two blocked runs, want 1", n)
	}
}

// blockedNotes returns the check runs in which the bot explains a blocked
// devel → staging promotion.
func blockedNotes(f *fixture) []githubtest.CheckRun {
	var out []githubtest.CheckRun
	for _, cr := range f.Srv.Repo(owner, repo).CheckRuns() {
		if cr.Name == "stagehand/promote-devel-staging" {
			out = append(out, cr)
		}
	}
	return out
}

func TestPromoteDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline))
	b := f.bot(t, WithClock(func() time.Time { return now }))
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)
	res, err := b.Promote(ctx, "devel", "staging", true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionDryRun || len(res.Files) != 3 || !strings.HasPrefix(res.Title, "Promote devel → staging") {
		t.Errorf("dry run = %+v", res)
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 || f.Srv.Repo(owner, repo).Branch(res.Branch) != "" {
		t.Error("a dry run wrote to the repository")
	}
	if _, err := b.Promote(ctx, "devel", "prod", true); err == nil || !strings.Contains(err.Error(), `finding stage "prod" in pipeline.yaml`) {
		t.Errorf("Promote to an unknown stage = %v", err)
	}
}

// examples reads examples/environments as repository files under environments/.
func examples(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := filepath.Join("..", "..", "examples", "environments")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files["environments/"+filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestExamplePipeline(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, examples(t))
	clock := now // Tuesday 10:00 London: prod's window is open
	b := f.bot(t, WithClock(func() time.Time { return clock }))

	// devel → staging auto-merges once healthy for 30m (no other checks on the PR).
	healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), 40*time.Minute)
	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || !res.Merged {
		t.Fatalf("devel → staging = %+v, want opened and merged", res)
	}
	if d := promote.Diff(f.stage(t, "main", "devel"), f.stage(t, "main", "staging")); len(d) != 0 {
		t.Errorf("after merging, staging differs from devel: %+v", d)
	}
	staging := f.stage(t, "main", "staging")
	if s, _ := staging.Service("checkout-api"); s.Version != "1.5.0" || s.Containers[0].DockerTag != "1.5.0" {
		t.Errorf("staging checkout-api = %+v, want version and tag 1.5.0", s)
	}
	// Version and tag change in place: the diff is those two value lines.
	if diff := cmp.Diff([]string{
		`-            "version": "1.4.2",`, `+            "version": "1.5.0",`,
		`-                    "dockerTag": "1.4.2"`, `+                    "dockerTag": "1.5.0"`,
	}, changedLines(t, examples(t)["environments/staging/checkout-api.json"], f.File(t, "main", "environments/staging/checkout-api.json"))); diff != "" {
		t.Errorf("staging/checkout-api.json diff (-want +got):\n%s", diff)
	}

	// staging → prod: healthy and soaked, inside the window; prod does not auto-merge.
	healthyAt(f, "staging", f.Srv.Repo(owner, repo).Branch("main"), 25*time.Hour)
	res, err = b.Promote(ctx, "staging", "prod", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || res.Merged || res.PR != 2 {
		t.Fatalf("staging → prod = %+v, want PR 2 opened, not merged", res)
	}
	if diff := cmp.Diff([]string{"environments/prod/manifest.json"}, res.Files); diff != "" {
		t.Errorf("prod files (-want +got):\n%s", diff)
	}
	if n := len(changedLines(t, examples(t)["environments/prod/manifest.json"], f.File(t, res.Branch, "environments/prod/manifest.json"))); n != 2*6 {
		t.Errorf("prod/manifest.json: %d changed lines, want version and tag of three services", n/2)
	}
	if d := promote.Diff(f.stage(t, "main", "staging"), f.stage(t, res.Branch, "prod")); len(d) != 0 {
		t.Errorf("prod on the branch still differs from staging: %+v", d)
	}
	pr := f.OpenPulls()[0]
	if !strings.Contains(pr.Body, "https://github.com/acme/checkout-api/compare/1.4.1...1.5.0") ||
		!strings.Contains(pr.Body, "https://github.com/acme/web-frontend/compare/2.9.0...3.0.0") {
		t.Errorf("prod PR body lacks the compare links:\n%s", pr.Body)
	}

	// Friday: prod's window (Monday to Thursday) is closed.
	clock = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	res, err = b.Promote(ctx, "staging", "prod", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionBlocked || !strings.Contains(res.Reason, "opens at 2026-11-30T09:00:00Z") {
		t.Errorf("Friday = %+v, want blocked until Monday 09:00", res)
	}
}

func TestPromoteUsesTheNewestHealthyCommit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, prbottest.Spread(healthyPipeline))
	b := f.bot(t, WithClock(func() time.Time { return now }))
	healthy := f.Srv.Repo(owner, repo).Branch("main")
	healthyAt(f, "devel", healthy, time.Hour)
	// devel moves on; the new search version has not been deployed healthy yet.
	f.Srv.Repo(owner, repo).Commit("main", map[string]string{"environments/devel/search.json": `{"services": [{"name": "search", "containers": [{"dockerTag": "0.2.0"}]}]}` + "\n"}, "bump search")
	f.Srv.Repo(owner, repo).Commit("main", map[string]string{"README.md": "docs\n"}, "docs")

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || res.Decision.Source != healthy {
		t.Fatalf("result = %+v, want opened from the healthy commit %s", res, healthy)
	}
	if got := f.File(t, res.Branch, "environments/staging/manifest.json"); !strings.Contains(got, `"0.1.0"`) || strings.Contains(got, `"0.2.0"`) {
		t.Errorf("staging manifest promotes the unhealthy version:\n%s", got)
	}
	if len(res.Decision.Held) != 1 || res.Decision.Held[0].Service != "search" || !strings.Contains(res.Decision.Held[0].Reason, "not healthy yet") {
		t.Errorf("held = %+v, want search's newer version waiting", res.Decision.Held)
	}
	if pr := f.OpenPulls()[0]; !strings.Contains(pr.Body, "- **search**: newer versions at") {
		t.Errorf("body does not say what waits:\n%s", pr.Body)
	}
}

// TestPromoteIncludesOutsideEnvironments promotes stages whose services live
// in team files outside environments/ (the RFC lets an include name any path
// relative to its manifest). Such a file counts as shared, so the promotion
// overrides the service in the stage's manifest; and a later commit that
// changes only the team file is seen as changing devel, so the older healthy
// version is the one promoted.
func TestPromoteIncludesOutsideEnvironments(t *testing.T) {
	ctx := context.Background()
	team := func(tag string) string {
		return `{"services": [{"name": "payments-api", "containers": [{"dockerTag": "` + tag + `"}]}]}` + "\n"
	}
	f := newFixture(t, map[string]string{
		"pipeline.yaml":                      healthyPipeline,
		"environments/devel/manifest.json":   `{"includes": ["../../teams/payments/devel.json"]}` + "\n",
		"environments/staging/manifest.json": `{"includes": ["../../teams/payments/staging.json"]}` + "\n",
		"teams/payments/devel.json":          team("2.4.0"),
		"teams/payments/staging.json":        team("2.3.0"),
	})
	b := f.bot(t, WithClock(func() time.Time { return now }))
	healthy := f.Srv.Repo(owner, repo).Branch("main")
	healthyAt(f, "devel", healthy, time.Hour)
	// devel moves on in its team file; 2.5.0 has not been deployed healthy yet.
	f.Srv.Repo(owner, repo).Commit("main", map[string]string{"teams/payments/devel.json": team("2.5.0")}, "bump payments")

	res, err := b.Promote(ctx, "devel", "staging", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened || res.Decision.Source != healthy {
		t.Fatalf("result = %+v, want opened from the healthy commit %s", res, healthy)
	}
	if diff := cmp.Diff([]string{"environments/staging/manifest.json"}, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	s, ok := f.stage(t, res.Branch, "staging").Service("payments-api")
	if !ok || s.Containers[0].DockerTag != "2.4.0" {
		t.Errorf("staging on the branch runs %+v, want payments-api 2.4.0 (the healthy version)", s)
	}
	if got := f.File(t, res.Branch, "teams/payments/staging.json"); got != team("2.3.0") {
		t.Errorf("the shared team file was edited:\n%s", got)
	}
}

// TestPromoteWarningOnlyWhereAccepted: devel's sequence finished with
// warning (a neutral stagehand/devel check run titled promote.WarningTitle,
// as the reconciler reports it). A stage triggered on devel's sequence with
// result pass holds; one that accepts warning promotes from it. A superseded
// plan's neutral check run is no warning for either.
func TestPromoteWarningOnlyWhereAccepted(t *testing.T) {
	const trigger = "stages:\n  - name: devel\n  - name: staging\n    triggeredOn: {event: devel.delivery.finished, selector: {match: {result: %s}}}\n    lockPath: apps/staging\n"
	for _, tc := range []struct {
		name, result, title string
		wantOpened          bool
	}{
		{"pass only, warning", "pass", promote.WarningTitle + ": applied 3 workloads", false},
		{"warning accepted, warning", "warning", promote.WarningTitle + ": applied 3 workloads", true},
		{"warning accepted, superseded", "warning", "Superseded by 0123abc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, prbottest.Spread(fmt.Sprintf(trigger, tc.result)))
			b := f.bot(t, WithClock(func() time.Time { return now }))
			head := f.Srv.Repo(owner, repo).Branch("main")
			f.Srv.Repo(owner, repo).AddCheckRun(githubtest.CheckRun{Name: promote.CheckName("devel"), HeadSHA: head, Status: "completed", Conclusion: "neutral",
				Title: tc.title, StartedAt: now.Add(-2 * time.Hour), CompletedAt: now.Add(-time.Hour)})
			res, err := b.Promote(ctx, "devel", "staging", false)
			if err != nil {
				t.Fatal(err)
			}
			if opened := res.Action == ActionOpened; opened != tc.wantOpened {
				t.Fatalf("result = %+v; opened %v, want %v", res, opened, tc.wantOpened)
			}
			if !tc.wantOpened && (len(res.Decision.Held) == 0 || !strings.Contains(res.Decision.Held[0].Reason, "not healthy")) {
				t.Errorf("held = %+v, want the services held as not healthy", res.Decision.Held)
			}
			if tc.wantOpened && res.Decision.Source != head {
				t.Errorf("source = %s, want the warned commit %s", res.Decision.Source, head)
			}
		})
	}
}
