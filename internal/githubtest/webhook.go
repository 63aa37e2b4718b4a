package githubtest

import (
	"context"

	"github.com/stagehand-gitops/stagehand/internal/githubtest/hook"
)

// Delivery is one webhook delivery: the X-GitHub-Event name, the X-GitHub-Delivery id and the raw body.
type Delivery = hook.Delivery

// Sign returns the X-Hub-Signature-256 value of body under secret.
func Sign(secret string, body []byte) string { return hook.Sign(secret, body) }

// Send delivers d to url signed with secret and returns the response status and body.
func Send(ctx context.Context, url, secret string, d Delivery) (int, string, error) {
	return hook.Send(ctx, url, secret, d)
}

// Webhooks builds the signed deliveries GitHub sends about one repository, from the server's state of it
// (package hook assembles them from GitHub's example payloads). Get it with Server.Webhooks.
type Webhooks struct {
	*world
	owner, name string
}

// source is where a delivery about repository r, acted on by sender, comes from; the caller holds s.mu.
func (s Webhooks) source(r *repo, sender string) hook.Source {
	return hook.Source{Repository: s.repoJSON(r), Owner: r.owner, OwnerID: userID(r.owner), Sender: s.user(sender),
		InstallationID: s.instID, AppID: s.appID}
}

// must returns d, failing the test on err.
func (s Webhooks) must(d Delivery, err error) Delivery {
	if err != nil {
		s.tb.Fatalf("githubtest: %v", err)
	}
	return d
}

// checkRun returns check run id of r as the REST API describes it; the caller holds s.mu (Fatalf unwinds
// through the caller's deferred Unlock).
func (s Webhooks) checkRun(r *repo, id int64) map[string]any {
	for _, c := range r.checkRuns {
		if c.ID == id {
			return checksAPI{s.world}.checkRunJSON(r, c)
		}
	}
	s.tb.Fatalf("githubtest: no check run %d in %s/%s", id, r.owner, r.name)
	return nil
}

// CheckRunAction builds the check_run delivery with action requested_action that GitHub sends when
// sender clicks the button with identifier on check run id (which must exist on the server).
func (s Webhooks) CheckRunAction(id int64, identifier, sender string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	return s.must(hook.CheckRunAction(s.source(r, sender), s.checkRun(r, id), identifier))
}

// CheckRun builds a check_run delivery with action created, completed or rerequested for check run
// id as the server holds it now (e.g. a CI run another app completed, for auto-merge).
func (s Webhooks) CheckRun(id int64, action, sender string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	return s.must(hook.CheckRun(s.source(r, sender), s.checkRun(r, id), action))
}

// Status builds the status delivery for a commit status set on sha (see Repo.SetStatus).
func (s Webhooks) Status(sha, context, state, sender string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	st := hook.Status{ID: s.id(), SHA: sha, Context: context, State: state}
	if c := r.commits[sha]; c != nil {
		st.Commit = s.commitJSON(r, c)
	}
	for b, head := range r.branches {
		if head == sha {
			st.Branches = append(st.Branches, map[string]any{"name": b, "commit": map[string]any{"sha": sha, "url": s.apiURL("/repos/%s/%s/commits/%s", s.owner, s.name, sha)}, "protected": false})
		}
	}
	return s.must(hook.StatusOf(s.source(r, sender), st))
}

// PullRequest builds a pull_request delivery (action opened, synchronize, reopened or closed) for
// pull request number as the server holds it now.
func (s Webhooks) PullRequest(number int, action, sender string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	for _, p := range r.pulls {
		if p.number == number {
			return s.must(hook.PullRequest(s.source(r, sender), pullsAPI{s.world}.pullJSON(r, p), action))
		}
	}
	s.tb.Fatalf("githubtest: no pull request #%d in %s/%s", number, s.owner, s.name)
	return Delivery{}
}

// Push builds a push delivery for branch moving from before to after.
func (s Webhooks) Push(branch, before, after, sender string) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	p := hook.Push{Branch: branch, Before: before, After: after}
	if c := r.commits[after]; c != nil {
		p.Message = &c.message
	}
	return s.must(hook.PushOf(s.source(r, sender), p))
}
