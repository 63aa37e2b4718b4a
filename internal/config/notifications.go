package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Notification is one sink of notifications: in reconciler.yaml,
// notifications: [{name, type, urlFile, secretFile, environments, events}].
type Notification struct {
	// Name names the sink in metrics and logs; unique.
	Name string `json:"name"`
	// Type is slack, teams, webhook or cloudevents.
	Type string `json:"type"`
	// URLFile holds the URL to POST to (a secret: Slack and Teams webhook
	// URLs carry their credential).
	URLFile string `json:"urlFile"`
	// SecretFile holds the HMAC-SHA256 key of a webhook sink.
	SecretFile string `json:"secretFile"`
	// Environments filters by environment; empty is every environment.
	Environments []string `json:"environments"`
	// Events filters by event (NotificationEvents); empty is every event.
	Events []string `json:"events"`
}

// NotificationTypes are the accepted notifications[].type values.
var NotificationTypes = []string{"slack", "teams", "webhook", "cloudevents"}

// NotificationEvents are the accepted notifications[].events values: the
// CloudEvents types without their "sh.stagehand." prefix.
var NotificationEvents = []string{"plan.pending", "plan.approved", "plan.rejected", "plan.superseded",
	"deploy.succeeded", "deploy.failed", "deploy.interrupted", "deploy.deferred", "deploy.break-glass", "lock.taken", "lock.released"}

// sequenceEventRE matches the events of delivery sequences a filter may
// name: <stage>.delivery.started|finished (* for any stage) and
// <task>.triggered|started|finished.
var sequenceEventRE = regexp.MustCompile(`^(([a-z0-9]([-a-z0-9]*[a-z0-9])?|\*)\.delivery\.(started|finished)|(approval|deployment|test|evaluation|release)\.(triggered|started|finished))$`)

// sequenceEventForms describes what sequenceEventRE accepts, for errors.
const sequenceEventForms = "<stage>.delivery.started|finished (* for any stage), <task>.triggered|started|finished (task: approval, deployment, test, evaluation, release)"

// validateNotifications checks the notifications: list.
func (c *Config) validateNotifications(bad func(field, format string, a ...any)) {
	seen := map[string]bool{}
	for i, n := range c.Notifications {
		f := fmt.Sprintf("notifications[%d]", i)
		switch {
		case n.Name == "":
			bad(f+".name", "required")
		case seen[n.Name]:
			bad(f+".name", "duplicate sink %q", n.Name)
		}
		seen[n.Name] = true
		if !slices.Contains(NotificationTypes, n.Type) {
			bad(f+".type", "unknown type %q; accepted: %s", n.Type, strings.Join(NotificationTypes, ", "))
		}
		if n.URLFile == "" {
			bad(f+".urlFile", "required: a file holding the URL to send to")
		}
		switch {
		case n.Type == "webhook" && n.SecretFile == "":
			bad(f+".secretFile", "required with type webhook: a file holding the HMAC key the body is signed with")
		case n.Type != "webhook" && n.SecretFile != "":
			bad(f+".secretFile", "only type webhook signs its body; type is %q", n.Type)
		}
		for j, e := range n.Environments {
			if _, ok := c.Environments[e]; !ok {
				bad(fmt.Sprintf("%s.environments[%d]", f, j), "unknown environment %q; configured: %s", e, strings.Join(c.EnvironmentNames(), ", "))
			}
		}
		for j, e := range n.Events {
			if !slices.Contains(NotificationEvents, e) && !sequenceEventRE.MatchString(e) {
				bad(fmt.Sprintf("%s.events[%d]", f, j), "unknown event %q; accepted: %s, %s", e, strings.Join(NotificationEvents, ", "), sequenceEventForms)
			}
		}
	}
}
