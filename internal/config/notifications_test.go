package config

import (
	"testing"
)

func TestNotifications(t *testing.T) {
	const envs = "environments: {prod: {targets: [{name: a, namespace: apps}]}, staging: {targets: [{name: a, namespace: apps}]}}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []Notification
		err        string
	}{
		{name: "none", yaml: envs},
		{name: "every type", yaml: envs + `notifications:
- {name: chat, type: slack, urlFile: /s/slack, environments: [prod], events: [plan.pending, deploy.failed]}
- {name: ops, type: teams, urlFile: /s/teams}
- {name: hook, type: webhook, urlFile: /s/hook, secretFile: /s/key}
- {name: bus, type: cloudevents, urlFile: /s/bus}`,
			want: []Notification{
				{Name: "chat", Type: "slack", URLFile: "/s/slack", Environments: []string{"prod"}, Events: []string{"plan.pending", "deploy.failed"}},
				{Name: "ops", Type: "teams", URLFile: "/s/teams"},
				{Name: "hook", Type: "webhook", URLFile: "/s/hook", SecretFile: "/s/key"},
				{Name: "bus", Type: "cloudevents", URLFile: "/s/bus"},
			}},
		{name: "no name", yaml: envs + "notifications: [{type: slack, urlFile: /u}]", err: "notifications[0].name: required"},
		{name: "duplicate name", yaml: envs + "notifications: [{name: a, type: slack, urlFile: /u}, {name: a, type: teams, urlFile: /u}]",
			err: `notifications[1].name: duplicate sink "a"`},
		{name: "unknown type", yaml: envs + "notifications: [{name: a, type: email, urlFile: /u}]",
			err: `notifications[0].type: unknown type "email"; accepted: slack, teams, webhook, cloudevents`},
		{name: "no url", yaml: envs + "notifications: [{name: a, type: slack}]", err: "notifications[0].urlFile: required"},
		{name: "webhook without key", yaml: envs + "notifications: [{name: a, type: webhook, urlFile: /u}]",
			err: "notifications[0].secretFile: required with type webhook"},
		{name: "key on slack", yaml: envs + "notifications: [{name: a, type: slack, urlFile: /u, secretFile: /k}]",
			err: `notifications[0].secretFile: only type webhook signs its body; type is "slack"`},
		{name: "unknown environment", yaml: envs + "notifications: [{name: a, type: slack, urlFile: /u, environments: [prod, qa]}]",
			err: `notifications[0].environments[1]: unknown environment "qa"; configured: prod, staging`},
		{name: "sequence and lock events", yaml: envs + "notifications: [{name: a, type: cloudevents, urlFile: /u, events: [lock.taken, lock.released, '*.delivery.finished', prod.delivery.started, test.finished, approval.triggered]}]",
			want: []Notification{{Name: "a", Type: "cloudevents", URLFile: "/u",
				Events: []string{"lock.taken", "lock.released", "*.delivery.finished", "prod.delivery.started", "test.finished", "approval.triggered"}}}},
		{name: "sequence event of another name", yaml: envs + "notifications: [{name: a, type: webhook, urlFile: /u, secretFile: /k, events: [prod.artifact-delivery.finished]}]",
			err: `notifications[0].events[0]: unknown event "prod.artifact-delivery.finished"; accepted: plan.pending,`},
		{name: "task of another name", yaml: envs + "notifications: [{name: a, type: webhook, urlFile: /u, secretFile: /k, events: [rollback.finished]}]",
			err: `<stage>.delivery.started|finished (* for any stage), <task>.triggered|started|finished`},
		{name: "unknown event", yaml: envs + "notifications: [{name: a, type: slack, urlFile: /u, events: [deploy.rolledback]}]",
			err: `notifications[0].events[0]: unknown event "deploy.rolledback"; accepted: plan.pending,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) []Notification { return c.Notifications })
		})
	}
}
