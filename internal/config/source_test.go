package config

import (
	"testing"
	"time"
)

func TestSource(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Source
		err        string
	}{
		{name: "defaults", yaml: "{}", want: Source{Branch: "main", Root: ".", Interval: Duration{time.Minute}}},
		{name: "https with token and verify", yaml: `source: {url: "https://github.com/acme/manifests.git", branch: release/1.2, root: deploy,
  interval: 30s, cacheDir: /var/cache/stagehand, auth: {username: deploy, tokenFile: /s/token}, verify: {mode: head, keyringFile: /s/keys.asc}}`,
			want: Source{URL: "https://github.com/acme/manifests.git", Branch: "release/1.2", Root: "deploy", Interval: Duration{30 * time.Second},
				CacheDir: "/var/cache/stagehand", Auth: Auth{Username: "deploy", TokenFile: "/s/token"}, Verify: &Verify{Mode: "head", KeyringFile: "/s/keys.asc"}}},
		{name: "ssh with cron", yaml: `source: {url: "git@github.com:acme/manifests.git", schedule: "*/5 * * * *", auth: {sshKeyFile: /s/id, knownHostsFile: /s/kh}}`,
			want: Source{URL: "git@github.com:acme/manifests.git", Branch: "main", Root: ".", Schedule: "*/5 * * * *", Auth: Auth{SSHKeyFile: "/s/id", KnownHostsFile: "/s/kh"}}},
		{name: "github app", yaml: `source: {url: "https://github.com/acme/m.git", auth: {githubApp: {appID: 1, installationID: 2, privateKeyFile: /s/app.pem}}}`,
			want: Source{URL: "https://github.com/acme/m.git", Branch: "main", Root: ".", Interval: Duration{time.Minute}, Auth: Auth{GitHubApp: &GitHubApp{AppID: 1, InstallationID: 2, PrivateKeyFile: "/s/app.pem"}}}},
		{name: "https with a private CA", yaml: `source: {url: "https://git.corp/acme/m.git", caFile: /s/ca.crt}`,
			want: Source{URL: "https://git.corp/acme/m.git", Branch: "main", Root: ".", Interval: Duration{time.Minute}, CAFile: "/s/ca.crt"}},
		{name: "ca for ssh", yaml: `source: {url: "ssh://git@h/x.git", caFile: /s/ca.crt, auth: {sshKeyFile: k, knownHostsFile: h}}`, err: "source.caFile: set, but source.url is not an https URL"},
		{name: "bad scheme", yaml: `source: {url: "ftp://x/y"}`, err: `source.url: unsupported scheme "ftp"`},
		{name: "not a url", yaml: `source: {url: "manifests"}`, err: `source.url: "manifests" is neither a URL`},
		{name: "bad branch", yaml: `source: {branch: "a..b"}`, err: `source.branch: invalid branch name "a..b"`},
		{name: "root outside", yaml: `source: {root: ../x}`, err: `source.root: "../x" must be a relative path`},
		{name: "schedule wins over interval", yaml: `source: {interval: 1m, schedule: "@hourly"}`, want: Source{Branch: "main", Root: ".", Interval: Duration{time.Minute}, Schedule: "@hourly"}},
		{name: "bad cron", yaml: `source: {schedule: "every minute"}`, err: `source.schedule: invalid cron expression "every minute"`},
		{name: "bad verify mode", yaml: `source: {verify: {mode: all, keyringFile: k}}`, err: `source.verify.mode: unknown mode "all"`},
		{name: "verify without keyring", yaml: `source: {verify: {mode: head}}`, err: "source.verify.keyringFile: keyringFile or allowedSignersFile required"},
		{name: "two credentials", yaml: `source: {url: "https://h/x", auth: {tokenFile: t, githubApp: {appID: 1, installationID: 2, privateKeyFile: k}}}`, err: "source.auth: tokenFile, sshKeyFile and githubApp are mutually exclusive"},
		{name: "ssh key without known_hosts", yaml: `source: {url: "ssh://git@h/x.git", auth: {sshKeyFile: k}}`, err: "source.auth.knownHostsFile: required with sshKeyFile"},
		{name: "ssh url without key", yaml: `source: {url: "ssh://git@h/x.git"}`, err: "source.auth.sshKeyFile: required for an ssh source.url"},
		{name: "ssh key for https", yaml: `source: {url: "https://h/x.git", auth: {sshKeyFile: k, knownHostsFile: h}}`, err: "source.auth.sshKeyFile: set, but source.url is not an ssh URL"},
		{name: "incomplete app", yaml: `source: {url: "https://h/x.git", auth: {githubApp: {appID: 1}}}`, err: "source.auth.githubApp.installationID: must be a positive installation id"},
		{name: "unknown key", yaml: `source: {verfy: {}}`, err: `unknown field "verfy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) Source { return c.Source })
		})
	}
}
