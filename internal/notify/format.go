package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// SignatureHeader carries a webhook sink's HMAC-SHA256 signature of the
// body: "sha256=" and the hex digest.
const SignatureHeader = "X-Stagehand-Signature"

// Block Kit's limits (https://api.slack.com/reference/block-kit).
const (
	slackMaxBlocks     = 50
	slackHeaderMax     = 150
	slackSectionMax    = 3000
	slackFieldMax      = 2000
	slackFieldsPerSect = 10
)

// encoder builds the request that delivers m to url.
type encoder func(ctx context.Context, url string, m message) (*http.Request, error)

func jsonRequest(ctx context.Context, url, contentType string, v any) (*http.Request, []byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("making request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	return req, body, nil
}

// slackText is a Block Kit text object.
type slackText struct {
	Type string `json:"type"` // plain_text or mrkdwn
	Text string `json:"text"`
}

// slackBlock is a Block Kit block (header, section or context).
type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

// slackEscape escapes the three characters mrkdwn gives a meaning.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackMessage is m as a Slack incoming-webhook message: a header, the
// summary, the plan as sections of fields (service and target, from → to),
// and a context line with the revision, the planHash and the approver.
func slackMessage(m message) map[string]any {
	mrk := func(s string, n int) slackText { return slackText{Type: "mrkdwn", Text: truncate(s, n)} }
	blocks := []slackBlock{
		{Type: "header", Text: &slackText{Type: "plain_text", Text: truncate(m.title(), slackHeaderMax)}},
		{Type: "section", Text: ptr(mrk(slackEscape.Replace(m.summary()), slackSectionMax))},
	}
	cs := m.data.Changes
	perSection := slackFieldsPerSect / 2
	room := (slackMaxBlocks - len(blocks) - 2) * perSection // the context and a "more" line
	shown := min(len(cs), room)
	for i := 0; i < shown; i += perSection {
		var fields []slackText
		for _, c := range cs[i:min(i+perSection, shown)] {
			fields = append(fields,
				mrk(fmt.Sprintf("*%s* (%s)\n%s", slackEscape.Replace(c.Service), slackEscape.Replace(c.Target), slackEscape.Replace(c.Workload)), slackFieldMax),
				mrk(fmt.Sprintf("`%s` → `%s`", slackEscape.Replace(c.From), slackEscape.Replace(c.To)), slackFieldMax))
		}
		blocks = append(blocks, slackBlock{Type: "section", Fields: fields})
	}
	if more := len(cs) - shown; more > 0 {
		blocks = append(blocks, slackBlock{Type: "section", Text: ptr(mrk(fmt.Sprintf("… %d more", more), slackSectionMax))})
	}
	ctx := fmt.Sprintf("revision `%s` · plan `%s`", gitsource.ShortRevision(m.data.Revision), m.data.PlanHash)
	if m.data.Approver != "" {
		ctx += " · approver " + slackEscape.Replace(m.data.Approver)
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []slackText{mrk(ctx, slackSectionMax)}})
	return map[string]any{"text": truncate(m.summary(), slackSectionMax), "blocks": blocks}
}

func ptr[T any](v T) *T { return &v }

func encodeSlack(ctx context.Context, url string, m message) (*http.Request, error) {
	req, _, err := jsonRequest(ctx, url, "application/json", slackMessage(m))
	return req, err
}

// teamsMaxFacts bounds the plan's FactSet.
const teamsMaxFacts = 50

// teamsMessage is m as a Teams Workflows webhook message: one Adaptive Card
// 1.4 with the headline, the summary, the facts of the event and the plan.
func teamsMessage(m message) map[string]any {
	d := m.data
	facts := []map[string]string{{"title": "Environment", "value": d.Environment}, {"title": "Revision", "value": gitsource.ShortRevision(d.Revision)},
		{"title": "Plan", "value": d.PlanHash}}
	if d.Approver != "" {
		facts = append(facts, map[string]string{"title": "Approver", "value": d.Approver})
	}
	if d.Result != "" {
		facts = append(facts, map[string]string{"title": "Result", "value": d.Result})
	}
	body := []map[string]any{
		{"type": "TextBlock", "text": m.title(), "weight": "Bolder", "size": "Medium", "wrap": true},
		{"type": "TextBlock", "text": m.summary(), "wrap": true},
		{"type": "FactSet", "facts": facts},
	}
	if len(d.Changes) > 0 {
		var plan []map[string]string
		for _, c := range d.Changes[:min(len(d.Changes), teamsMaxFacts)] {
			plan = append(plan, map[string]string{"title": c.Service + " (" + c.Target + ")", "value": c.From + " → " + c.To})
		}
		body = append(body, map[string]any{"type": "FactSet", "facts": plan})
		if more := len(d.Changes) - teamsMaxFacts; more > 0 {
			body = append(body, map[string]any{"type": "TextBlock", "text": fmt.Sprintf("… %d more", more), "wrap": true})
		}
	}
	return map[string]any{"type": "message", "attachments": []map[string]any{{
		"contentType": "application/vnd.microsoft.card.adaptive",
		"content": map[string]any{"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
			"version": "1.4", "body": body},
	}}}
}

func encodeTeams(ctx context.Context, url string, m message) (*http.Request, error) {
	req, _, err := jsonRequest(ctx, url, "application/json", teamsMessage(m))
	return req, err
}

// encodeWebhook sends the CloudEvent in structured JSON mode, signed with
// key: SignatureHeader is "sha256=" and the hex HMAC-SHA256 of the body.
func encodeWebhook(key []byte) encoder {
	return func(ctx context.Context, url string, m message) (*http.Request, error) {
		req, body, err := jsonRequest(ctx, url, "application/cloudevents+json", m.event)
		if err != nil {
			return nil, err
		}
		req.Header.Set(SignatureHeader, Sign(key, body))
		return req, nil
	}
}

// Sign is the SignatureHeader value of body under key.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// encodeCloudEvents sends the CloudEvent in binary mode (ce-* headers, the
// data as the body) through the sdk's HTTP binding.
func encodeCloudEvents(ctx context.Context, url string, m message) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, fmt.Errorf("making request: %w", err)
	}
	e := m.event.Clone()
	if err := cehttp.WriteRequest(binding.WithForceBinary(ctx), binding.ToMessage(&e), req); err != nil {
		return nil, fmt.Errorf("encoding cloudevent: %w", err)
	}
	return req, nil
}
