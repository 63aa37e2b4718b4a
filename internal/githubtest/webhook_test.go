package githubtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
)

func TestCheckRunActionDelivery(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	sha := srv.Repo("acme", "manifests").Branch("main")
	id := srv.Repo("acme", "manifests").AddCheckRun(githubtest.CheckRun{Name: "stagehand/prod", HeadSHA: sha, ExternalID: "hash1", Conclusion: "action_required"})

	type got struct {
		event, sig string
		body       []byte
	}
	ch := make(chan got, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- got{r.Header.Get("X-GitHub-Event"), r.Header.Get("X-Hub-Signature-256"), b}
	}))
	defer hook.Close()

	d := srv.Webhooks("acme", "manifests").CheckRunAction(id, "approve", "maria")
	status, _, err := githubtest.Send(ctx, hook.URL, "s3cret", d)
	if err != nil || status != http.StatusOK {
		t.Fatalf("Send = %d, %v", status, err)
	}
	g := <-ch
	if g.event != "check_run" || g.sig != githubtest.Sign("s3cret", g.body) {
		t.Errorf("event %q signature %q", g.event, g.sig)
	}
	// The payload parses as go-github's event and carries our ids.
	var ev github.CheckRunEvent
	if err := json.Unmarshal(g.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.GetAction() != "requested_action" || ev.GetRequestedAction().Identifier != "approve" ||
		ev.GetCheckRun().GetID() != id || ev.GetCheckRun().GetHeadSHA() != sha || ev.GetCheckRun().GetExternalID() != "hash1" ||
		ev.GetSender().GetLogin() != "maria" || ev.GetRepo().GetFullName() != "acme/manifests" || ev.GetInstallation().GetID() != srv.App().InstallationID() {
		t.Errorf("event not rewritten: %+v", ev)
	}
}

func TestPullRequestDelivery(t *testing.T) {
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	head := srv.Repo("acme", "manifests").Commit("feature", map[string]string{"a": "b"}, "feature")
	n := srv.Repo("acme", "manifests").OpenPullRequest("feature", "main", "Feature", "maria")
	var ev github.PullRequestEvent
	if err := json.Unmarshal(srv.Webhooks("acme", "manifests").PullRequest(n, "synchronize", "maria").Body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.GetAction() != "synchronize" || ev.GetNumber() != n || ev.GetPullRequest().GetHead().GetSHA() != head ||
		ev.GetPullRequest().GetBase().GetRef() != "main" || ev.GetRepo().GetFullName() != "acme/manifests" {
		t.Errorf("event not rewritten: action %q number %d head %q", ev.GetAction(), ev.GetNumber(), ev.GetPullRequest().GetHead().GetSHA())
	}
}

func TestCheckRunAndStatusDeliveries(t *testing.T) {
	srv := githubtest.New(t)
	srv.CreateRepo("acme", "manifests", "main")
	sha := srv.Repo("acme", "manifests").Commit("promote", map[string]string{"a": "b"}, "promote")
	id := srv.Repo("acme", "manifests").AddCheckRun(githubtest.CheckRun{Name: "ci/build", HeadSHA: sha, Conclusion: "success"})
	var cr github.CheckRunEvent
	if err := json.Unmarshal(srv.Webhooks("acme", "manifests").CheckRun(id, "completed", "ci").Body, &cr); err != nil {
		t.Fatal(err)
	}
	if cr.GetAction() != "completed" || cr.GetCheckRun().GetConclusion() != "success" || cr.GetCheckRun().GetHeadSHA() != sha || cr.GetRepo().GetFullName() != "acme/manifests" {
		t.Errorf("check_run event: %+v", cr)
	}
	var st github.StatusEvent
	if err := json.Unmarshal(srv.Webhooks("acme", "manifests").Status(sha, "ci/jenkins", "success", "ci").Body, &st); err != nil {
		t.Fatal(err)
	}
	if st.GetSHA() != sha || st.GetState() != "success" || st.GetContext() != "ci/jenkins" || len(st.Branches) != 1 || st.Branches[0].GetName() != "promote" {
		t.Errorf("status event: sha %q state %q context %q branches %v", st.GetSHA(), st.GetState(), st.GetContext(), st.Branches)
	}
}
