package lock

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "plain", in: "apps/staging/a/auth-app", want: "apps/staging/a/auth-app"},
		{name: "forced lowercase", in: "Apps/STAGING", want: "apps/staging"},
		{name: "digits", in: "apps/env2/a", want: "apps/env2/a"},
		{name: "empty", in: "", err: "invalid lock path: empty"},
		{name: "leading slash", in: "/apps", err: `invalid lock path "/apps": segment 1 is empty`},
		{name: "trailing slash", in: "apps/", err: `invalid lock path "apps/": segment 2 is empty`},
		{name: "double slash", in: "apps//a", err: `invalid lock path "apps//a": segment 2 is empty`},
		{name: "underscore", in: "apps/my_app", err: `segment 2 "my_app" has characters outside a-z, 0-9 and "-"`},
		{name: "dot", in: "apps/../x", err: `segment 2 ".." has characters outside`},
		{name: "too long", in: strings.Repeat("a", 254), err: "254 characters, at most 253 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizePath(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("NormalizePath(%q) error = %v, want it to contain %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("NormalizePath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPrefixes(t *testing.T) {
	want := []string{"apps", "apps/acceptance", "apps/acceptance/a", "apps/acceptance/a/saas-app", "apps/acceptance/a/saas-app/develop"}
	if diff := cmp.Diff(want, Prefixes("apps/acceptance/a/saas-app/develop")); diff != "" {
		t.Errorf("Prefixes (-want +got):\n%s", diff)
	}
}

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     Type
		friendly string
	}{
		{"automation", Automation, "an automation run"},
		{"Deploy", Deploy, "a deploy"},
		{"incident", Incident, "an incident"},
		{"freeze", Freeze, "a release freeze"},
	} {
		got, err := ParseType(tc.in)
		if err != nil || got != tc.want || got.Friendly() != tc.friendly {
			t.Errorf("ParseType(%q) = %q (%q), %v; want %q (%q)", tc.in, got, got.Friendly(), err, tc.want, tc.friendly)
		}
	}
	if _, err := ParseType("outage"); err == nil || !strings.Contains(err.Error(), `invalid lock type "outage": want one of automation, deploy, incident, freeze, hold`) {
		t.Errorf("ParseType(outage) error = %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "90m", want: 90 * time.Minute},
		{in: "6h", want: 6 * time.Hour},
		{in: "30s", want: 30 * time.Second},
		{in: "2d", want: 48 * time.Hour},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "", err: `invalid duration "": want a number with a unit s, m, h or d`},
		{in: "90", err: `invalid duration "90"`},
		{in: "1w", err: `invalid duration "1w"`},
		{in: "-5m", err: `invalid duration "-5m"`},
		{in: "1.5h", err: `invalid duration "1.5h"`},
		{in: "0m", err: `invalid duration "0m": must be longer than zero`},
		{in: "99999999d", err: "is too large"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseDuration(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseUntil(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "2022-12-31T12:00", want: time.Date(2022, 12, 31, 12, 0, 0, 0, berlin)},
		{in: "2022-12-31T12:00:30", want: time.Date(2022, 12, 31, 12, 0, 30, 0, berlin)},
		{in: "2022-12-31T12:00Z", want: time.Date(2022, 12, 31, 12, 0, 0, 0, time.UTC)},
		{in: "2022-12-31T12:00:00Z", want: time.Date(2022, 12, 31, 12, 0, 0, 0, time.UTC)},
		{in: "2022-12-31T12:00:00+02:00", want: time.Date(2022, 12, 31, 10, 0, 0, 0, time.UTC)},
		{in: "tomorrow", err: `invalid time "tomorrow": want a time such as 2022-12-31T12:00 (local time) or 2022-12-31T12:00Z (UTC)`},
		{in: "2022-13-31T12:00", err: `invalid time "2022-13-31T12:00"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseUntil(tc.in, berlin)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseUntil(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("ParseUntil(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	until := time.Date(2022, 12, 31, 12, 0, 0, 0, time.UTC)
	l := Lock{Path: "apps/acceptance/a", Type: Deploy, ExpiresAt: until}
	if got, want := l.LockedMessage(time.UTC), "Locked apps/acceptance/a for a deploy until Sat 31 Dec, 12:00"; got != want {
		t.Errorf("LockedMessage = %q, want %q", got, want)
	}
	l = Lock{Path: "gitlab/production", Type: Incident, ExpiresAt: until}
	if got, want := l.LockedMessage(time.UTC), "Locked gitlab/production for an incident until Sat 31 Dec, 12:00"; got != want {
		t.Errorf("LockedMessage = %q, want %q", got, want)
	}
	l = Lock{Path: "apps/acceptance", Type: Automation, ExpiresAt: until, Env: Env{Cluster: "testing", Account: "staging"}}
	if got, want := l.BlockingMessage(time.UTC), "apps/acceptance is locked until Sat 31 Dec, 12:00 by an automation run in testing/staging."; got != want {
		t.Errorf("BlockingMessage = %q, want %q", got, want)
	}
	// The expiry is written in the location asked for.
	if got, want := l.BlockingMessage(time.FixedZone("X", -3*3600)), "apps/acceptance is locked until Sat 31 Dec, 09:00 by an automation run in testing/staging."; got != want {
		t.Errorf("BlockingMessage = %q, want %q", got, want)
	}
}

func TestLockJSON(t *testing.T) {
	l := Lock{
		Path: "apps/staging", Type: Automation, Author: "qa@example.com",
		Links:     map[string]string{"pipeline": "https://ci.example.com/1"},
		CreatedAt: time.Unix(1672480800, 0).UTC(), UpdatedAt: time.Unix(1672480800, 0).UTC(), ExpiresAt: time.Unix(1672488000, 0).UTC(),
		Env: Env{Cluster: "apps", Account: "staging"},
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"path":"apps/staging","type":"automation","author":"qa@example.com","links":{"pipeline":"https://ci.example.com/1"},"created_at":1672480800,"updated_at":1672480800,"expires_at":1672488000,"env":{"cluster":"apps","account":"staging"}}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	var back Lock
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDefault(t *testing.T) {
	env := func(kv ...string) LookupEnv {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	path := "apps/staging/a/chat-app/main"
	for _, tc := range []struct {
		name   string
		lookup LookupEnv
		in     Lock
		want   Lock
	}{
		{
			name:   "outside CI: $USER and the path, no ci",
			lookup: env("USER", "alice"),
			want:   Lock{Author: "alice", Env: Env{Cluster: "apps", Account: "staging", Target: "a"}},
		},
		{
			name:   "nil lookup: only the path",
			lookup: nil,
			want:   Lock{Env: Env{Cluster: "apps", Account: "staging", Target: "a"}},
		},
		{
			name: "GitLab CI",
			lookup: env("CI", "true", "GITLAB_CI", "true", "GITLAB_USER_EMAIL", "dev@example.com", "USER", "root",
				"CLUSTER_NAME", "testing", "DEPLOY_ENV", "qa", "DEPLOY_TARGET", "b",
				"CI_PROJECT_PATH", "acme/chat-app", "CI_COMMIT_REF_SLUG", "feature-foo", "CI_COMMIT_SHA", "abc123",
				"CI_PIPELINE_ID", "42", "CI_JOB_ID", "4242"),
			want: Lock{Author: "dev@example.com", Env: Env{Cluster: "testing", Account: "qa", Target: "b"},
				CI: &CI{Project: "acme/chat-app", Ref: "feature-foo", Commit: "abc123", Pipeline: "42", Job: "4242"}},
		},
		{
			name: "GitHub Actions",
			lookup: env("CI", "true", "GITHUB_ACTIONS", "true", "GITHUB_ACTOR", "octocat", "USER", "runner",
				"GITHUB_REPOSITORY", "acme/chat-app", "GITHUB_REF_NAME", "main", "GITHUB_SHA", "def456",
				"GITHUB_RUN_ID", "77", "GITHUB_JOB", "deploy"),
			want: Lock{Author: "octocat", Env: Env{Cluster: "apps", Account: "staging", Target: "a"},
				CI: &CI{Project: "acme/chat-app", Ref: "main", Commit: "def456", Pipeline: "77", Job: "deploy"}},
		},
		{
			name:   "GitHub variables ignored outside GitHub Actions; CI falls back to the path",
			lookup: env("CI", "1", "GITHUB_ACTOR", "mallory", "GITHUB_REPOSITORY", "x/y", "USER", "bob"),
			want: Lock{Author: "bob", Env: Env{Cluster: "apps", Account: "staging", Target: "a"},
				CI: &CI{Project: "chat-app", Ref: "main"}},
		},
		{
			name:   "explicit values win",
			lookup: env("GITLAB_CI", "true", "GITLAB_USER_EMAIL", "dev@example.com", "CI_PROJECT_PATH", "acme/x"),
			in:     Lock{Author: "carol", Env: Env{Cluster: "c", Account: "e", Target: "z"}, CI: &CI{Project: "p"}},
			want: Lock{Author: "carol", Env: Env{Cluster: "c", Account: "e", Target: "z"},
				CI: &CI{Project: "p", Ref: "main"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.in
			l.Path = path
			l.Default(tc.lookup)
			tc.want.Path = path
			if diff := cmp.Diff(tc.want, l); diff != "" {
				t.Errorf("Default (-want +got):\n%s", diff)
			}
		})
	}
}
