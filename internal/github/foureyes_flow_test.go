package github_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

// commitMessage is commit with its own message (trailers, say), mirrored into githubtest with it.
func (f *flow) commitMessage(tag, message string) string {
	f.t.Helper()
	files := map[string]string{"environments/prod/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "` + tag + `"}]}]}`}
	sha := f.git.Repo("manifests").Commit(f.t, "main", files, message)
	f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, message)
	return sha
}

// refusedBy clicks Approve on run id as login and waits for the run to say that login may not approve
// for four-eyes, with every part of want in its summary; the run keeps its buttons and nothing is counted.
func (f *flow) refusedBy(sha string, id int64, login string, want ...string) {
	f.t.Helper()
	if code, _ := f.click(id, "approve", login, secret); code != http.StatusOK {
		f.t.Fatalf("approve by %s: %d", login, code)
	}
	run := f.waitRun(sha, login+" refused", func(r githubtest.CheckRun) bool {
		if !awaitingApproval(r) || !strings.Contains(r.Summary, "@"+login+" may not approve this plan: four-eyes: ") {
			return false
		}
		for _, w := range want {
			if !strings.Contains(r.Summary, w) {
				return false
			}
		}
		return true
	})
	if len(run.Actions) != 2 {
		f.t.Errorf("refused run lost its buttons: %+v", run.Actions)
	}
	if p := f.pending(); p == nil || len(p.Approvals) != 0 {
		f.t.Fatalf("pending after %s's click: %+v, want no approvals", login, p)
	}
}

// TestFlowFourEyesCommitter: whoever committed a commit someone else wrote (a rebase, a push of another's
// work) is kept out like its author.
func TestFlowFourEyesCommitter(t *testing.T) {
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "admin")
	f.gh.Repo(owner, repo).SetPermission("quinn", "maintain")
	f.setPolicy(config.Approvals{ForbidAuthors: true})
	sha := f.commit("1.0.1")
	f.gh.Repo(owner, repo).SetCommitPeople(sha, githubtest.Person{Login: "wendy", Name: "Wendy", Email: "wendy@acme.example"},
		githubtest.Person{Login: "quinn", Name: "Quinn", Email: "quinn@acme.example"})
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.refusedBy(sha, run.ID, "quinn", "quinn wrote or committed commit "+sha[:12])
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied on the committer's approval: %s", f.image())
	}
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve by mark: %d", code)
	}
	f.waitImage("1.0.1")
}

// TestFlowFourEyesPullRequest: the commits came through a pull request. Its commit's co-author (a
// Co-authored-by trailer), the pull request's author and whoever merged it are kept out, though none of
// them is the commit's author or committer; someone else applies it.
func TestFlowFourEyesPullRequest(t *testing.T) {
	f := newFlow(t)
	for _, login := range []string{"mark", "pat", "sam", "quinn"} {
		f.gh.Repo(owner, repo).SetPermission(login, "maintain")
	}
	f.setPolicy(config.Approvals{ForbidAuthors: true})
	sha := f.commitMessage("1.0.1", "api 1.0.1\n\nCo-authored-by: Sam <4242+sam@users.noreply.github.com>\n")
	f.gh.Repo(owner, repo).SetCommitAuthor(sha, "maria")
	pr := f.gh.Repo(owner, repo).OpenPullRequest("api-1.0.1", "main", "api 1.0.1", "pat")
	f.gh.Repo(owner, repo).RecordMerge(pr, sha, "quinn")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.refusedBy(sha, run.ID, "sam", "(as sam)")
	f.refusedBy(sha, run.ID, "pat", "(as pat)")
	f.refusedBy(sha, run.ID, "quinn", "(as quinn)")
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied on a refused approval: %s", f.image())
	}
	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve by mark: %d", code)
	}
	f.waitImage("1.0.1")
	f.waitRun(sha, "success", concluded("success")) // completed after the history is recorded
	if h := f.history(); len(h) != 1 || h[0].Approver != "github:mark" {
		t.Errorf("history = %+v, want one apply approved by mark", h)
	}
}

// TestFlowFourEyesUntiedEmail: a commit whose author's e-mail GitHub ties to no account (the commit's
// author is null) could be anyone's, the approver's too: every approval is refused with the address named,
// not waved through.
func TestFlowFourEyesUntiedEmail(t *testing.T) {
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "admin")
	f.setPolicy(config.Approvals{ForbidAuthors: true})
	sha := f.commit("1.0.1")
	f.gh.Repo(owner, repo).SetCommitPeople(sha, githubtest.Person{Name: "Ghost", Email: "ghost@elsewhere.example"},
		githubtest.Person{Login: "maria", Name: "Maria", Email: "maria@acme.example"})
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	f.refusedBy(sha, run.ID, "mark", `the author e-mail address "ghost@elsewhere.example" of commit `+sha[:12]+" is tied to no GitHub account")
	if f.image() != f.reg.Ref("team/api", "1.0.0") {
		t.Fatalf("applied with an untied author: %s", f.image())
	}
}
