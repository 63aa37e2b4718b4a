package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A payload must be the shape its X-GitHub-Event says: a handler is never
// given a check_run event without a check run, or a push without a ref. The
// shapes list the fields Stagehand's handlers rely on, as GitHub always
// sends them (see the examples in testdata); a field given with the wrong
// JSON type is refused as well.

type repositoryShape struct {
	FullName *string `json:"full_name"`
}

type pushShape struct {
	Ref        *string          `json:"ref"`
	After      *string          `json:"after"`
	Repository *repositoryShape `json:"repository"`
}

type checkRunShape struct {
	Action   *string `json:"action"`
	CheckRun *struct {
		ID      *int64  `json:"id"`
		Name    *string `json:"name"`
		HeadSHA *string `json:"head_sha"`
		Status  *string `json:"status"`
	} `json:"check_run"`
	Repository      *repositoryShape `json:"repository"`
	RequestedAction *struct {
		Identifier *string `json:"identifier"`
	} `json:"requested_action"`
}

type checkSuiteShape struct {
	Action     *string `json:"action"`
	CheckSuite *struct {
		ID      *int64  `json:"id"`
		HeadSHA *string `json:"head_sha"`
	} `json:"check_suite"`
	Repository *repositoryShape `json:"repository"`
}

type refShape struct {
	Ref *string `json:"ref"`
	SHA *string `json:"sha"`
}

type pullRequestShape struct {
	Action      *string `json:"action"`
	Number      *int    `json:"number"`
	PullRequest *struct {
		Head *refShape `json:"head"`
		Base *refShape `json:"base"`
	} `json:"pull_request"`
	Repository *repositoryShape `json:"repository"`
}

type statusShape struct {
	SHA        *string          `json:"sha"`
	State      *string          `json:"state"`
	Context    *string          `json:"context"`
	Repository *repositoryShape `json:"repository"`
}

type pingShape struct {
	Zen *string `json:"zen"`
}

// checkShape decodes payload as the event type requires and names the
// first required field it lacks. Events Stagehand does not know need only
// be a JSON object.
func checkShape(event string, payload []byte) error {
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("X-GitHub-Event %q: the payload is not a JSON object", clip(event))
	}
	var missing []string
	need := func(name string, present bool) {
		if !present {
			missing = append(missing, name)
		}
	}
	var err error
	switch event {
	case "push":
		var p pushShape
		if err = json.Unmarshal(payload, &p); err == nil {
			need("ref", p.Ref != nil && *p.Ref != "")
			need("after", p.After != nil && *p.After != "")
			need("repository.full_name", p.Repository != nil && p.Repository.FullName != nil)
		}
	case "check_run":
		var p checkRunShape
		if err = json.Unmarshal(payload, &p); err == nil {
			need("action", p.Action != nil && *p.Action != "")
			need("check_run", p.CheckRun != nil)
			if c := p.CheckRun; c != nil {
				need("check_run.id", c.ID != nil)
				need("check_run.name", c.Name != nil && *c.Name != "")
				need("check_run.head_sha", c.HeadSHA != nil && *c.HeadSHA != "")
				need("check_run.status", c.Status != nil && *c.Status != "")
			}
			need("repository.full_name", p.Repository != nil && p.Repository.FullName != nil)
			if p.Action != nil && *p.Action == "requested_action" {
				need("requested_action.identifier", p.RequestedAction != nil && p.RequestedAction.Identifier != nil && *p.RequestedAction.Identifier != "")
			}
		}
	case "check_suite":
		var p checkSuiteShape
		if err = json.Unmarshal(payload, &p); err == nil {
			need("action", p.Action != nil && *p.Action != "")
			need("check_suite", p.CheckSuite != nil)
			if c := p.CheckSuite; c != nil {
				need("check_suite.id", c.ID != nil)
				need("check_suite.head_sha", c.HeadSHA != nil && *c.HeadSHA != "")
			}
			need("repository.full_name", p.Repository != nil && p.Repository.FullName != nil)
		}
	case "pull_request":
		var p pullRequestShape
		if err = json.Unmarshal(payload, &p); err == nil {
			need("action", p.Action != nil && *p.Action != "")
			need("number", p.Number != nil)
			need("pull_request", p.PullRequest != nil)
			if pr := p.PullRequest; pr != nil {
				need("pull_request.head.ref", pr.Head != nil && pr.Head.Ref != nil)
				need("pull_request.head.sha", pr.Head != nil && pr.Head.SHA != nil && *pr.Head.SHA != "")
				need("pull_request.base.ref", pr.Base != nil && pr.Base.Ref != nil)
			}
			need("repository.full_name", p.Repository != nil && p.Repository.FullName != nil)
		}
	case "status":
		var p statusShape
		if err = json.Unmarshal(payload, &p); err == nil {
			need("sha", p.SHA != nil && *p.SHA != "")
			need("state", p.State != nil && *p.State != "")
			need("context", p.Context != nil)
			need("repository.full_name", p.Repository != nil && p.Repository.FullName != nil)
		}
	case "ping":
		var p pingShape
		if err = json.Unmarshal(payload, &p); err == nil {
			need("zen", p.Zen != nil)
		}
	default:
		var p map[string]json.RawMessage
		err = json.Unmarshal(payload, &p)
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Errorf("X-GitHub-Event %q: the payload's %s is a JSON %s, which is the wrong type", clip(event), typeErr.Field, typeErr.Value)
	case err != nil:
		return fmt.Errorf("X-GitHub-Event %q: the payload is not valid JSON: %v", clip(event), err)
	case len(missing) > 0:
		return fmt.Errorf("X-GitHub-Event %q: the payload lacks %s; is the event header right?", event, strings.Join(missing, ", "))
	}
	return nil
}

// clip shortens a header value for a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:60] + "…"
	}
	return s
}
