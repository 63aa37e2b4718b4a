package config

import (
	"testing"
	"time"
)

func TestExpandURLTemplate(t *testing.T) {
	got := ExpandURLTemplate("https://{env}.acme.com/log/{revision}", "prod eu", "abc")
	if want := "https://prod%20eu.acme.com/log/abc"; got != want {
		t.Errorf("ExpandURLTemplate = %q, want %q", got, want)
	}
}

func TestGitHub(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       GitHub
		err        string
	}{
		{name: "unset", yaml: "{}", want: GitHub{Approvers: Approvers{MinPermission: "maintain"}}},
		{name: "enterprise app", yaml: `github: {apiURL: "https://ghe.acme.com/api/v3", owner: acme, repo: manifests,
  app: {appID: 12, installationID: 34, privateKeyFile: /keys/app.pem}, webhookSecretFile: /keys/hook,
  approvers: {minPermission: write, teams: [acme/sre]}, detailsURL: "https://stagehand.acme.com"}`,
			want: GitHub{APIURL: "https://ghe.acme.com/api/v3", Owner: "acme", Repo: "manifests",
				App: &GitHubApp{AppID: 12, InstallationID: 34, PrivateKeyFile: "/keys/app.pem"}, WebhookSecretFile: "/keys/hook",
				Approvers: Approvers{MinPermission: "write", Teams: []string{"acme/sre"}}, DetailsURL: "https://stagehand.acme.com"}},
		{name: "owner missing", yaml: "github: {repo: manifests}", err: "github.owner: required"},
		{name: "owner in repo", yaml: "github: {owner: acme, repo: acme/manifests}", err: `github.repo: "acme/manifests": give the name only`},
		{name: "incomplete app", yaml: "github: {owner: acme, repo: m, app: {appID: 1}}", err: "github.app.installationID: must be a positive installation id, got 0"},
		{name: "app key", yaml: "github: {owner: acme, repo: m, app: {appID: 1, installationID: 2}}", err: "github.app.privateKeyFile: required"},
		{name: "relative api url", yaml: "github: {owner: acme, repo: m, apiURL: ghe.acme.com}", err: `github.apiURL: "ghe.acme.com" is not an absolute http(s) URL`},
		{name: "bad team", yaml: "github: {owner: acme, repo: m, approvers: {teams: [sre]}}", err: `github.approvers.teams: entry 0 "sre": want org/team-slug`},
		{name: "bad permission", yaml: "github: {approvers: {minPermission: owner}}", err: `github.approvers.minPermission: unknown permission "owner"`},
		{name: "webhook body cap", yaml: "github: {owner: acme, repo: m, webhookMaxBodyBytes: 1048576}",
			want: GitHub{Owner: "acme", Repo: "m", WebhookMaxBodyBytes: 1 << 20, Approvers: Approvers{MinPermission: "maintain"}}},
		{name: "webhook body cap too small", yaml: "github: {owner: acme, repo: m, webhookMaxBodyBytes: 100}",
			err: "github.webhookMaxBodyBytes: must be between 1024 and 26214400 bytes (GitHub's own cap, 25 MiB), got 100"},
		{name: "webhook body cap over GitHub's", yaml: "github: {owner: acme, repo: m, webhookMaxBodyBytes: 26214401}",
			err: "github.webhookMaxBodyBytes: must be between 1024 and 26214400 bytes (GitHub's own cap, 25 MiB), got 26214401"},
		{name: "deployments", yaml: `github: {owner: acme, repo: m, app: {appID: 12, installationID: 34, privateKeyFile: /keys/app.pem},
  deployments: {enabled: true, environmentURL: "https://{env}.acme.com", logURL: "https://stagehand.acme.com/api/v1/environments/{env}?revision={revision}"}}`,
			want: GitHub{Owner: "acme", Repo: "m", App: &GitHubApp{AppID: 12, InstallationID: 34, PrivateKeyFile: "/keys/app.pem"},
				Approvers: Approvers{MinPermission: "maintain"}, Deployments: GitHubDeployments{Enabled: true,
					EnvironmentURL: "https://{env}.acme.com", LogURL: "https://stagehand.acme.com/api/v1/environments/{env}?revision={revision}"}}},
		{name: "deployments without the app", yaml: "github: {owner: acme, repo: m, deployments: {enabled: true}}", err: "github.deployments.enabled: needs github.app"},
		{name: "deployments unknown placeholder", yaml: `github: {owner: acme, repo: m, deployments: {logURL: "https://x.acme.com/{environment}"}}`,
			err: `github.deployments.logURL: "https://x.acme.com/{environment}": unknown placeholder; accepted: {env}, {revision}`},
		{name: "deployments relative url", yaml: `github: {owner: acme, repo: m, deployments: {environmentURL: "{env}.acme.com"}}`,
			err: `github.deployments.environmentURL: "{env}.acme.com": not an absolute http(s) URL`},
		{name: "previews", yaml: "github: {owner: acme, repo: m, previews: {workers: 2, timeout: 5m}}",
			want: GitHub{Owner: "acme", Repo: "m", Approvers: Approvers{MinPermission: "maintain"}, Previews: GitHubPreviews{Workers: 2, Timeout: Duration{Duration: 5 * time.Minute}}}},
		{name: "previews workers", yaml: "github: {owner: acme, repo: m, previews: {workers: 100}}",
			err: "github.previews.workers: must be between 1 and 16 (0 keeps the default, 1), got 100"},
		{name: "previews timeout", yaml: "github: {owner: acme, repo: m, previews: {timeout: -1s}}",
			err: "github.previews.timeout: must be positive and at most 1h (0 keeps the default, 2m), got -1s"},
		{name: "unknown key", yaml: "github: {token: x}", err: `unknown field "token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) GitHub { return c.GitHub })
		})
	}
}
