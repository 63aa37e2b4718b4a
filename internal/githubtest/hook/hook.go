package hook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
)

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

// Source is what every delivery says about where it comes from, as the REST API describes each: the
// repository, its owner's login and id, who acted (sender) and the App's installation and id.
type Source struct {
	Repository     map[string]any
	Owner          string
	OwnerID        int64
	Sender         map[string]any
	InstallationID int64
	AppID          int64
}

// CheckRunAction is the check_run delivery with action requested_action that GitHub sends when the sender
// clicks the button with identifier on run (the check run as the REST API describes it), made by the App.
func CheckRunAction(src Source, run map[string]any, identifier string) (Delivery, error) {
	run = maps.Clone(run)
	run["check_suite"] = map[string]any{"id": run["id"], "head_sha": run["head_sha"], "head_branch": nil, "status": "completed", "pull_requests": []any{}}
	run["app"] = map[string]any{"id": src.AppID, "slug": "stagehand", "name": "Stagehand"}
	return build(src, "check_run.requested_action.json", func(m map[string]any) {
		m["check_run"] = run
		m["requested_action"] = map[string]any{"identifier": identifier}
	})
}

// CheckRun is a check_run delivery with action created, completed or rerequested for run (the check run as
// the REST API describes it), made by another App (a CI's).
func CheckRun(src Source, run map[string]any, action string) (Delivery, error) {
	run = maps.Clone(run)
	run["check_suite"] = map[string]any{"id": run["id"], "head_sha": run["head_sha"], "head_branch": nil, "status": run["status"], "pull_requests": []any{}}
	run["app"] = map[string]any{"id": src.AppID + 1, "slug": "ci", "name": "CI"}
	return build(src, "check_run.created.json", func(m map[string]any) { m["check_run"], m["action"] = run, action })
}

// Status is a commit status event: its id, the commit (sha, and as the REST API describes it, nil when
// unknown), the status's context and state, and the branches whose head the commit is.
type Status struct {
	ID             int64
	SHA            string
	Commit         map[string]any
	Context, State string
	Branches       []any
}

// StatusOf is the status delivery of st.
func StatusOf(src Source, st Status) (Delivery, error) {
	return build(src, "status.json", func(m map[string]any) {
		m["id"], m["sha"], m["context"], m["state"], m["name"] = st.ID, st.SHA, st.Context, st.State, src.Repository["full_name"]
		if st.Commit != nil {
			m["commit"] = st.Commit
		}
		if st.Branches == nil {
			st.Branches = []any{}
		}
		m["branches"] = st.Branches
	})
}

// PullRequest is a pull_request delivery with action opened, synchronize, reopened or closed for pr (the
// pull request as the REST API describes it).
func PullRequest(src Source, pr map[string]any, action string) (Delivery, error) {
	file := "pull_request.opened.json"
	if action == "closed" {
		file = "pull_request.closed.json"
	}
	return build(src, file, func(m map[string]any) {
		if old, ok := m["pull_request"].(map[string]any); ok {
			maps.Copy(old, pr)
		}
		m["action"], m["number"] = action, pr["number"]
	})
}

// Push is a push of branch from commit before to after; Message is after's message (nil keeps the
// example's).
type Push struct {
	Branch, Before, After string
	Message               *string
}

// PushOf is the push delivery of p.
func PushOf(src Source, p Push) (Delivery, error) {
	return build(src, "push.json", func(m map[string]any) {
		m["ref"], m["before"], m["after"] = "refs/heads/"+p.Branch, p.Before, p.After
		if hc, ok := m["head_commit"].(map[string]any); ok {
			hc["id"], hc["tree_id"] = p.After, p.After
			if p.Message != nil {
				hc["message"] = *p.Message
			}
		}
		m["commits"] = []any{}
	})
}

// build loads a real example payload of GitHub's, lets fill set its event's fields, points its repository,
// organization, sender and installation at src and marshals it into a delivery.
func build(src Source, example string, fill func(m map[string]any)) (Delivery, error) {
	b, err := webhookFS.ReadFile("testdata/webhooks/" + example)
	if err != nil {
		return Delivery{}, fmt.Errorf("reading payload %s: %w", example, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return Delivery{}, fmt.Errorf("parsing payload %s: %w", example, err)
	}
	fill(m)
	if old, ok := m["repository"].(map[string]any); ok {
		maps.Copy(old, src.Repository)
	}
	if org, ok := m["organization"].(map[string]any); ok {
		org["login"], org["id"] = src.Owner, src.OwnerID
	}
	m["sender"] = src.Sender
	m["installation"] = map[string]any{"id": src.InstallationID, "node_id": "I_" + strconv.FormatInt(src.InstallationID, 10)}
	event := example[:bytes.IndexByte([]byte(example), '.')]
	body, err := json.Marshal(m)
	if err != nil {
		return Delivery{}, fmt.Errorf("marshalling %s payload: %w", event, err)
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	return Delivery{Event: event, ID: "githubtest-" + hex.EncodeToString(id), Body: body}, nil
}
