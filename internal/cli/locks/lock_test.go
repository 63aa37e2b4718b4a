package locks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/lock/lockapi"
)

const lockTestToken = "cli-test-token"

// lockWorld is a reconciler API (httptest) over Kubernetes lock storage on
// the test control plane, with a clock and an environment the test controls.
type lockWorld struct {
	t         *testing.T
	namespace string
	srv       *httptest.Server
	tokenFile string

	mu  sync.Mutex
	now time.Time
	env map[string]string
}

func newLockWorld(t *testing.T) *lockWorld {
	t.Helper()
	env := cluster.Env(t)
	w := &lockWorld{t: t, namespace: env.Namespace(t), now: time.Date(2022, 12, 31, 10, 30, 0, 0, time.UTC), env: map[string]string{"USER": "tester"}}
	st, err := lock.NewKubernetesForConfig(env.Config, w.namespace)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lock.New(st, lock.WithClock(w.clock))
	if err != nil {
		t.Fatal(err)
	}
	h, err := lockapi.NewHandler(svc, lockTestToken)
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(h)
	t.Cleanup(w.srv.Close)
	w.tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(w.tokenFile, []byte(lockTestToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *lockWorld) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *lockWorld) advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// setEnv replaces the environment the commands see.
func (w *lockWorld) setEnv(kv ...string) {
	w.env = map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		w.env[kv[i]] = kv[i+1]
	}
}

// exec runs `reconciler args...` in process, as the main would (with the
// lock commands only).
func (w *lockWorld) exec(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	var out, errOut bytes.Buffer
	env := w.env
	deps := lockDeps{
		now:    w.clock,
		lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		loc:    time.UTC,
	}
	root := command.Root(&cobra.Command{Use: "reconciler", SilenceUsage: true, SilenceErrors: true}, &out, &errOut, Commands())
	root.SetArgs(args)
	err := root.ExecuteContext(withLockDeps(context.Background(), deps))
	if err != nil && err.Error() != "" {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), command.Code(err)
}

// api runs a lock command against the REST server.
func (w *lockWorld) api(args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	return w.exec(append(args, "--server", w.srv.URL, "--token-file", w.tokenFile)...)
}

type step struct {
	args           []string
	stdout, stderr string
	code           int
}

func (w *lockWorld) script(steps []step) {
	w.t.Helper()
	for i, s := range steps {
		out, errOut, code := w.api(s.args...)
		if code != s.code || out != s.stdout || errOut != s.stderr {
			w.t.Errorf("step %d: reconciler %s\n got exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q",
				i+1, strings.Join(s.args, " "), code, out, errOut, s.code, s.stdout, s.stderr)
		}
	}
}

// The seed's first example: prevent a deploy during an automation run.
func TestLockScenarioAutomationRun(t *testing.T) {
	w := newLockWorld(t)
	w.setEnv("CI", "true", "GITLAB_CI", "true", "GITLAB_USER_EMAIL", "qa@example.com", "CLUSTER_NAME", "testing", "DEPLOY_ENV", "staging")
	blocked := "Error: apps/acceptance is locked until Sat 31 Dec, 12:00 by an automation run in testing/staging.\n"
	w.script([]step{
		{args: []string{"lock", "apps/acceptance", "--type", "automation", "--duration", "90m"},
			stdout: "Locked apps/acceptance for an automation run until Sat 31 Dec, 12:00\n"},
		// The saas-app deploy job checks recursively and does not deploy.
		{args: []string{"check", "apps/acceptance/a/saas-app/develop"}, stderr: blocked, code: 1},
		{args: []string{"check", "--path", "apps", "--path", "apps/acceptance", "--path", "apps/acceptance/a"}, stderr: blocked, code: 1},
		// Only the leaf: not locked.
		{args: []string{"check", "apps/acceptance/a/saas-app/develop", "--recursive=false"},
			stdout: "apps/acceptance/a/saas-app/develop is not locked for a deploy\n"},
		// The wrong type cannot remove it.
		{args: []string{"unlock", "apps/acceptance", "--type", "deploy"},
			stderr: "Error: refusing to unlock apps/acceptance: it is locked for an automation run, not a deploy (--type deploy)\n", code: 1},
		{args: []string{"check", "apps/acceptance/a/saas-app/develop"}, stderr: blocked, code: 1},
		{args: []string{"unlock", "apps/acceptance", "--type", "automation"}, stdout: "Unlocked apps/acceptance (an automation run)\n"},
		// Retry: no lock, runs normally.
		{args: []string{"check", "apps/acceptance/a/saas-app/develop"}, stdout: "apps/acceptance/a/saas-app/develop is not locked for a deploy\n"},
	})

	// If the final job does not run, the lock still expires after 90 minutes.
	w.script([]step{
		{args: []string{"lock", "apps/acceptance", "--type", "automation", "--duration", "90m"},
			stdout: "Locked apps/acceptance for an automation run until Sat 31 Dec, 12:00\n"},
	})
	w.advance(89 * time.Minute)
	w.script([]step{{args: []string{"check", "apps/acceptance/a/saas-app/develop"}, stderr: blocked, code: 1}})
	w.advance(time.Minute)
	w.script([]step{
		{args: []string{"check", "apps/acceptance/a/saas-app/develop"}, stdout: "apps/acceptance/a/saas-app/develop is not locked for a deploy\n"},
		{args: []string{"prune", "apps"}, stdout: "Pruned apps/acceptance (an automation run, expired Sat 31 Dec, 12:00)\n"},
		{args: []string{"prune", "apps"}, stdout: "No expired locks\n"},
	})
}

// The seed's second example: prevent a deploy during a production incident.
func TestLockScenarioIncident(t *testing.T) {
	w := newLockWorld(t)
	w.setEnv("USER", "first-responder")
	blocked := "Error: apps/production is locked until Sat 31 Dec, 16:30 by an incident in apps/production.\n"
	w.script([]step{
		{args: []string{"lock", "apps/production", "--type", "incident", "--duration", "6h", "--link", "incident=https://status.example.com/1"},
			stdout: "Locked apps/production for an incident until Sat 31 Dec, 16:30\n"},
		// Both production clusters are locked.
		{args: []string{"check", "apps/production/a/auth-app"}, stderr: blocked, code: 1},
		{args: []string{"check", "apps/production/b/auth-app"}, stderr: blocked, code: 1},
		{args: []string{"lock", "apps/production/a/auth-app"}, stderr: blocked, code: 1},
		// Staging is not.
		{args: []string{"check", "apps/staging/a/auth-app"}, stdout: "apps/staging/a/auth-app is not locked for a deploy\n"},
		{args: []string{"unlock", "apps/production", "--type", "automation"},
			stderr: "Error: refusing to unlock apps/production: it is locked for an incident, not an automation run (--type automation)\n", code: 1},
		{args: []string{"unlock", "apps/production", "--type", "incident"}, stdout: "Unlocked apps/production (an incident)\n"},
		{args: []string{"check", "apps/production/a/auth-app"}, stdout: "apps/production/a/auth-app is not locked for a deploy\n"},
		{args: []string{"unlock", "apps/production", "--type", "incident"}, stderr: "Error: apps/production is not locked\n", code: 1},
	})

	// An incident that allows a deploy hotfix: deploys pass, automation does not.
	w.script([]step{
		{args: []string{"lock", "apps/production", "--type", "incident", "--until", "2022-12-31T16:30Z", "--allow", "deploy"},
			stdout: "Locked apps/production for an incident until Sat 31 Dec, 16:30\n"},
		{args: []string{"check", "apps/production/a/auth-app"}, stdout: "apps/production/a/auth-app is not locked for a deploy\n"},
		{args: []string{"check", "apps/production/a/auth-app", "--type", "automation"}, stderr: blocked, code: 1},
		{args: []string{"lock", "apps/production/a/auth-app", "--duration", "5m"},
			stdout: "Locked apps/production/a/auth-app for a deploy until Sat 31 Dec, 10:35\n"},
	})
}

// The seed's third example: duplicate deploys of one service conflict.
func TestLockScenarioDuplicateDeploys(t *testing.T) {
	w := newLockWorld(t)
	foo := []string{"CI", "true", "GITLAB_CI", "true", "GITLAB_USER_EMAIL", "foo@example.com", "CI_PROJECT_PATH", "acme/chat-app",
		"CI_COMMIT_REF_SLUG", "feature-foo", "CI_COMMIT_SHA", "1111", "CI_PIPELINE_ID", "10", "CI_JOB_ID", "100"}
	bar := []string{"CI", "true", "GITHUB_ACTIONS", "true", "GITHUB_ACTOR", "bar", "GITHUB_REPOSITORY", "acme/chat-app",
		"GITHUB_REF_NAME", "feature-bar", "GITHUB_SHA", "2222", "GITHUB_RUN_ID", "20", "GITHUB_JOB", "deploy"}
	blocked := "Error: apps/staging/a/chat-app is locked until Sat 31 Dec, 11:30 by a deploy in apps/staging.\n"

	w.setEnv(foo...)
	w.script([]step{{args: []string{"lock", "apps/staging/a/chat-app"}, stdout: "Locked apps/staging/a/chat-app for a deploy until Sat 31 Dec, 11:30\n"}})
	w.setEnv(bar...)
	w.script([]step{
		{args: []string{"lock", "apps/staging/a/chat-app"}, stderr: blocked, code: 1},
		{args: []string{"lock", "apps/staging/a/chat-app/feature-bar"}, stderr: blocked, code: 1},
	})
	// The stored lock carries the first job's CI fields.
	out, _, code := w.api("list", "apps/staging", "-o", "json")
	var got struct{ Locks []lock.Lock }
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || len(got.Locks) != 1 {
		t.Fatalf("list: %q, exit %d, %v", out, code, err)
	}
	wantCI := &lock.CI{Project: "acme/chat-app", Ref: "feature-foo", Commit: "1111", Pipeline: "10", Job: "100"}
	if diff := cmp.Diff(wantCI, got.Locks[0].CI); diff != "" || got.Locks[0].Author != "foo@example.com" {
		t.Errorf("stored lock author %q, ci (-want +got):\n%s", got.Locks[0].Author, diff)
	}
	w.setEnv(foo...)
	w.script([]step{{args: []string{"unlock", "apps/staging/a/chat-app"}, stdout: "Unlocked apps/staging/a/chat-app (a deploy)\n"}})
	w.setEnv(bar...)
	w.script([]step{{args: []string{"lock", "apps/staging/a/chat-app"}, stdout: "Locked apps/staging/a/chat-app for a deploy until Sat 31 Dec, 11:30\n"}})
	out, _, _ = w.api("list", "-o", "json")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Locks) != 1 || got.Locks[0].Author != "bar" || got.Locks[0].CI == nil || got.Locks[0].CI.Ref != "feature-bar" {
		t.Errorf("after the retry: %s", out)
	}
}

// Direct Kubernetes storage: the same objects the API serves.
func TestLockKubernetesStorage(t *testing.T) {
	env := cluster.Env(t)
	w := newLockWorld(t)
	kube := []string{"--storage", "kubernetes", "--kubeconfig", env.Kubeconfig, "--namespace", w.namespace}
	// Direct storage keeps the API server's time (TestLockClockOff), not the test's clock.
	w.now = time.Now().UTC()
	out, errOut, code := w.exec(append([]string{"lock", "apps/staging", "--type", "freeze", "--duration", "2d"}, kube...)...)
	if code != 0 || !strings.HasPrefix(out, "Locked apps/staging for a release freeze until ") {
		t.Fatalf("lock: exit %d, %q, %q", code, out, errOut)
	}
	until := strings.TrimSuffix(strings.TrimPrefix(out, "Locked apps/staging for a release freeze until "), "\n")
	w.script([]step{{args: []string{"check", "apps/staging/a/x"}, stderr: "Error: apps/staging is locked until " + until + " by a release freeze in apps/staging.\n", code: 1}})
	w.setEnv("KUBECONFIG", env.Kubeconfig)
	out, errOut, code = w.exec("list", "--storage", "kubernetes", "--namespace", w.namespace)
	if code != 0 || !strings.Contains(out, "apps/staging  freeze  tester  "+until+"  active\n") {
		t.Errorf("list: exit %d, stderr %q, stdout:\n%s\nwant apps/staging until %s, active", code, errOut, out, until)
	}
	w.env["USER"] = "tester"
	out, _, code = w.exec("unlock", "apps/staging", "--type", "freeze", "--storage", "kubernetes", "--namespace", w.namespace)
	if code != 0 || out != "Unlocked apps/staging (a release freeze)\n" {
		t.Errorf("unlock: exit %d, %q", code, out)
	}
}

// Several paths: all locked or none.
func TestLockSeveralPaths(t *testing.T) {
	w := newLockWorld(t)
	w.script([]step{
		{args: []string{"lock", "apps/staging/b", "--type", "incident"}, stdout: "Locked apps/staging/b for an incident until Sat 31 Dec, 11:30\n"},
		{args: []string{"lock", "--path", "apps/staging/a", "--path", "apps/staging/b", "--type", "automation"},
			stderr: "Error: apps/staging/b is locked until Sat 31 Dec, 11:30 by an incident in apps/staging.\n", code: 1},
		{args: []string{"check", "apps/staging/a"}, stdout: "apps/staging/a is not locked for a deploy\n"},
		{args: []string{"lock", "--path", "apps/staging/a", "--path", "apps/staging/c", "--type", "automation", "--duration", "30m"},
			stdout: "Locked apps/staging/a for an automation run until Sat 31 Dec, 11:00\nLocked apps/staging/c for an automation run until Sat 31 Dec, 11:00\n"},
		{args: []string{"unlock", "apps/staging", "--type", "automation", "--recursive"},
			stdout: "Unlocked apps/staging/a (an automation run)\nUnlocked apps/staging/c (an automation run)\n"},
	})
}

func TestLockUsageErrors(t *testing.T) {
	w := newLockWorld(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad path", []string{"lock", "apps//a"}, `invalid lock path "apps//a": segment 2 is empty`},
		{"bad characters", []string{"check", "apps/my_app"}, `segment 2 "my_app" has characters outside a-z, 0-9 and "-"`},
		{"no path", []string{"check"}, "expected a lock path such as apps/staging/a/auth-app"},
		{"bad duration", []string{"lock", "apps/a", "--duration", "90"}, `--duration: invalid duration "90": want a number with a unit s, m, h or d`},
		{"zero duration", []string{"lock", "apps/a", "--duration", "0h"}, "must be longer than zero"},
		{"both expiries", []string{"lock", "apps/a", "--duration", "5m", "--until", "2023-01-01T00:00"}, "--duration and --until are mutually exclusive"},
		{"bad until", []string{"lock", "apps/a", "--until", "next week"}, `--until: invalid time "next week"`},
		{"past until by the server's clock", []string{"lock", "apps/a", "--until", "2022-12-31T10:00Z", "--server", w.srv.URL, "--token-file", w.tokenFile}, "expiry 2022-12-31T10:00:00Z is not in the future"},
		{"bad type", []string{"lock", "apps/a", "--type", "outage"}, `--type: invalid lock type "outage": want one of automation, deploy, incident, freeze, hold`},
		{"bad allow", []string{"lock", "apps/a", "--allow", "hotfix"}, `--allow: invalid lock type "hotfix"`},
		{"bad link", []string{"lock", "apps/a", "--link", "nolink"}, `invalid --link "nolink": want name=url`},
		{"bad env target", []string{"lock", "apps/a", "--env-target", "ab"}, `invalid --env-target "ab": want one lowercase letter`},
		{"recursive lock", []string{"lock", "apps/a", "--recursive"}, "--recursive is not available for lock"},
		{"the reconciler's author", []string{"lock", "apps/a", "--author", "stagehand-reconciler"}, `--author: author "stagehand-reconciler" is reserved for the reconciler's own deploy locks`},
		{"unknown flag", []string{"lock", "apps/a", "--force"}, "unknown flag: --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := w.api(tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no store", []string{"check", "apps/a"}, "no lock store: pass --server URL (or set $STAGEHAND_SERVER) or --storage kubernetes"},
		{"no token", []string{"check", "apps/a", "--server", w.srv.URL}, "--server needs a token: pass --token-file, set $STAGEHAND_TOKEN or $GITHUB_TOKEN, log in to gh, or run reconciler login"},
		{"both stores", []string{"check", "apps/a", "--server", w.srv.URL, "--storage", "kubernetes"}, "--server and --storage are mutually exclusive"},
		{"memory", []string{"check", "apps/a", "--storage", "memory"}, "--storage memory keeps locks in one process only"},
		{"unknown storage", []string{"check", "apps/a", "--storage", "etcd"}, `invalid --storage "etcd": expected kubernetes`},
		{"dynamodb", []string{"check", "apps/a", "--storage", "dynamodb"}, "--storage dynamodb: DynamoDB lock storage is not supported: Stagehand keeps locks in Kubernetes; use --storage kubernetes"},
		{"dynamodb table", []string{"prune", "apps/a", "--table", "locks"}, `--table "locks": DynamoDB lock storage is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := w.exec(tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, tc.want)
			}
		})
	}
	// $STAGEHAND_SERVER and $STAGEHAND_TOKEN instead of flags; a wrong token is an error (exit 1).
	w.setEnv("USER", "x", "STAGEHAND_SERVER", w.srv.URL, "STAGEHAND_TOKEN", lockTestToken)
	if out, errOut, code := w.exec("check", "apps/a"); code != 0 || out != "apps/a is not locked for a deploy\n" {
		t.Errorf("with $STAGEHAND_SERVER: exit %d, %q, %q", code, out, errOut)
	}
	w.env["STAGEHAND_TOKEN"] = "wrong-token-value"
	if _, errOut, code := w.exec("check", "apps/a"); code != 1 || !strings.Contains(errOut, "missing or wrong bearer token (HTTP 401)") || strings.Contains(errOut, "wrong-token-value") {
		t.Errorf("wrong token: exit %d, stderr %q", code, errOut)
	}
}

func TestWriteLockTable(t *testing.T) {
	now := time.Date(2022, 12, 31, 10, 30, 0, 0, time.UTC)
	locks := []lock.Lock{
		{Path: "apps/production", Type: lock.Incident, Author: "oncall", Allow: []lock.Type{lock.Deploy, lock.Freeze}, ExpiresAt: now.Add(6 * time.Hour)},
		{Path: "apps/staging/a/chat-app", Type: lock.Deploy, Author: "ci", ExpiresAt: now.Add(-time.Minute)},
	}
	var out bytes.Buffer
	if err := writeLockTable(&out, locks, now, time.UTC); err != nil {
		t.Fatal(err)
	}
	want := "PATH                     TYPE      AUTHOR  EXPIRES            STATUS\n" +
		"apps/production          incident  oncall  Sat 31 Dec, 16:30  active (allows deploy, freeze)\n" +
		"apps/staging/a/chat-app  deploy    ci      Sat 31 Dec, 10:29  expired\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestLockClockOff: a CLI whose clock is two hours slow, or two hours fast,
// writes a lock straight to Kubernetes whose created and expiry times are the
// API server's: a one-hour incident lock expires an hour from now for the
// reconciler, and cannot be created already expired.
func TestLockClockOff(t *testing.T) {
	env := cluster.Env(t)
	for _, off := range []time.Duration{-2 * time.Hour, 2 * time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			w := newLockWorld(t)
			w.now = time.Now().Add(off)
			kube := []string{"--storage", "kubernetes", "--kubeconfig", env.Kubeconfig, "--namespace", w.namespace}
			before := time.Now()
			if out, errOut, code := w.exec(append([]string{"lock", "apps/prod", "--type", "incident", "--duration", "1h"}, kube...)...); code != 0 {
				t.Fatalf("lock: exit %d, %q, %q", code, out, errOut)
			}
			after := time.Now()
			st, err := lock.NewKubernetesForConfig(env.Config, w.namespace)
			if err != nil {
				t.Fatal(err)
			}
			l, err := st.Get(context.Background(), "apps/prod")
			if err != nil {
				t.Fatal(err)
			}
			// Whole seconds, and the server's Date header is to the second.
			slack := 2 * time.Second
			if l.CreatedAt.Before(before.Add(-slack)) || l.CreatedAt.After(after.Add(slack)) {
				t.Errorf("created at %s, want the server's now (between %s and %s)", l.CreatedAt, before, after)
			}
			if l.ExpiresAt.Before(before.Add(time.Hour-slack)) || l.ExpiresAt.After(after.Add(time.Hour+slack)) {
				t.Errorf("expires at %s, want an hour after the server's now (%s)", l.ExpiresAt, before.Add(time.Hour))
			}
		})
	}
}
