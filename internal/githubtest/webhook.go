package githubtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Webhooks builds the signed deliveries GitHub sends about one repository, from the server's state of it.
// Get it with Server.Webhooks.
type Webhooks struct {
	*world
	owner, name string
}

//go:embed testdata/webhooks/*.json
var webhookFS embed.FS

// Delivery is one webhook delivery: the X-GitHub-Event name, the X-GitHub-Delivery id and the raw body.
type Delivery struct {
	Event string
	ID    string
	Body  []byte
}

// Sign returns the X-Hub-Signature-256 value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Request builds the POST GitHub would send to url, signed with secret ("" sends no signature).
func (d Delivery) Request(ctx context.Context, url, secret string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return nil, fmt.Errorf("building webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/githubtest")
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("X-GitHub-Delivery", d.ID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", Sign(secret, d.Body))
	}
	return req, nil
}

// Send delivers d to url signed with secret and returns the response status and body.
func Send(ctx context.Context, url, secret string, d Delivery) (int, string, error) {
	req, err := d.Request(ctx, url, secret)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("sending webhook %s: %w", d.Event, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

func loadPayload(name string) (map[string]any, error) {
	b, err := webhookFS.ReadFile("testdata/webhooks/" + name)
	if err != nil {
		return nil, fmt.Errorf("reading payload %s: %w", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parsing payload %s: %w", name, err)
	}
	return m, nil
}

// payload loads a real example payload, failing the test if it cannot.
func (s Webhooks) payload(name string) map[string]any {
	m, err := loadPayload(name)
	if err != nil {
		s.tb.Fatal(err)
	}
	return m
}

// mustCheckRun returns check run id of r; the caller holds s.mu (Fatalf
// unwinds through the caller's deferred Unlock).
func (s Webhooks) mustCheckRun(r *repo, id int64) *CheckRun {
	for _, c := range r.checkRuns {
		if c.ID == id {
			return c
		}
	}
	s.tb.Fatalf("githubtest: no check run %d in %s/%s", id, r.owner, r.name)
	return nil
}

func (s Webhooks) delivery(event string, m map[string]any) Delivery {
	b, err := json.Marshal(m)
	if err != nil {
		s.tb.Fatalf("githubtest: marshalling %s payload: %v", event, err)
	}
	return Delivery{Event: event, ID: "githubtest-" + randomHex(8), Body: b}
}

// rewriteCommon points the payload's repository, organization, sender and installation at our world.
func (s Webhooks) rewriteCommon(m map[string]any, r *repo, sender string) {
	repoJSON := s.repoJSON(r)
	if old, ok := m["repository"].(map[string]any); ok {
		for k, v := range repoJSON {
			old[k] = v
		}
	}
	if org, ok := m["organization"].(map[string]any); ok {
		org["login"], org["id"] = r.owner, userID(r.owner)
	}
	m["sender"] = s.user(sender)
	m["installation"] = map[string]any{"id": s.instID, "node_id": "I_" + strconv.FormatInt(s.instID, 10)}
}

// CheckRunActionDelivery builds the check_run delivery with action requested_action that GitHub sends when
// sender clicks the button with identifier on check run id (which must exist on the server).
func (s Webhooks) CheckRunAction(id int64, identifier, sender string) Delivery {
	m := s.payload("check_run.requested_action.json")
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	cr := s.mustCheckRun(r, id)
	run := checksAPI{s.world}.checkRunJSON(r, cr)
	run["check_suite"] = map[string]any{"id": cr.ID, "head_sha": cr.HeadSHA, "head_branch": nil, "status": "completed", "pull_requests": []any{}}
	run["app"] = map[string]any{"id": s.appID, "slug": "stagehand", "name": "Stagehand"}
	m["check_run"] = run
	m["requested_action"] = map[string]any{"identifier": identifier}
	s.rewriteCommon(m, r, sender)
	return s.delivery("check_run", m)
}

// CheckRunDelivery builds a check_run delivery with action created, completed or rerequested for check run
// id as the server holds it now (e.g. a CI run another app completed, for auto-merge).
func (s Webhooks) CheckRun(id int64, action, sender string) Delivery {
	m := s.payload("check_run.created.json")
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	cr := s.mustCheckRun(r, id)
	run := checksAPI{s.world}.checkRunJSON(r, cr)
	run["check_suite"] = map[string]any{"id": cr.ID, "head_sha": cr.HeadSHA, "head_branch": nil, "status": cr.Status, "pull_requests": []any{}}
	run["app"] = map[string]any{"id": s.appID + 1, "slug": "ci", "name": "CI"}
	m["check_run"], m["action"] = run, action
	s.rewriteCommon(m, r, sender)
	return s.delivery("check_run", m)
}

// StatusDelivery builds the status delivery for a commit status set on sha (see SetStatus).
func (s Webhooks) Status(sha, context, state, sender string) Delivery {
	m := s.payload("status.json")
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	m["id"], m["sha"], m["context"], m["state"], m["name"] = s.id(), sha, context, state, s.owner+"/"+s.name
	if c := r.commits[sha]; c != nil {
		m["commit"] = s.commitJSON(r, c)
	}
	var branches []any
	for b, head := range r.branches {
		if head == sha {
			branches = append(branches, map[string]any{"name": b, "commit": map[string]any{"sha": sha, "url": s.apiURL("/repos/%s/%s/commits/%s", s.owner, s.name, sha)}, "protected": false})
		}
	}
	m["branches"] = orEmpty(branches)
	s.rewriteCommon(m, r, sender)
	return s.delivery("status", m)
}

// PullRequestDelivery builds a pull_request delivery (action opened, synchronize, reopened or closed) for
// pull request number as the server holds it now.
func (s Webhooks) PullRequest(number int, action, sender string) Delivery {
	file := "pull_request.opened.json"
	if action == "closed" {
		file = "pull_request.closed.json"
	}
	m := s.payload(file)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	var p *pull
	for _, x := range r.pulls {
		if x.number == number {
			p = x
		}
	}
	if p == nil {
		s.tb.Fatalf("githubtest: no pull request #%d in %s/%s", number, s.owner, s.name)
	}
	pr, _ := m["pull_request"].(map[string]any)
	for k, v := range (pullsAPI{s.world}).pullJSON(r, p) {
		pr[k] = v
	}
	m["action"], m["number"] = action, number
	s.rewriteCommon(m, r, sender)
	return s.delivery("pull_request", m)
}

// PushDelivery builds a push delivery for branch moving from before to after.
func (s Webhooks) Push(branch, before, after, sender string) Delivery {
	m := s.payload("push.json")
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(s.owner, s.name)
	m["ref"], m["before"], m["after"] = "refs/heads/"+branch, before, after
	if hc, ok := m["head_commit"].(map[string]any); ok {
		hc["id"], hc["tree_id"] = after, after
		if c := r.commits[after]; c != nil {
			hc["message"] = c.message
		}
	}
	m["commits"] = []any{}
	s.rewriteCommon(m, r, sender)
	return s.delivery("push", m)
}
