package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// TestLogin: reconciler login runs GitHub's device flow against githubtest,
// waits the interval GitHub gives (and the longer one of a slow_down), and
// saves a token of the person who entered the code, readable by them only;
// the API commands then send it.
func TestLogin(t *testing.T) {
	gh := githubtest.New(t)
	gh.OAuth().EnableDeviceFlow("Iv1.stagehand", time.Second, time.Second)
	gh.OAuth().ForceSlowDown(1)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	for _, v := range []string{"STAGEHAND_TOKEN", "GITHUB_TOKEN"} {
		t.Setenv(v, "")
	}
	type result struct {
		stdout, stderr string
		code           int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := runReconciler(t, "login", "--client-id", "Iv1.stagehand", "--github-url", gh.RootURL(), "--timeout", "1m")
		done <- result{o, e, c}
	}()
	var code string
	testenv.WaitFor(t, 30*time.Second, "a device code", func() bool {
		if c := gh.OAuth().PendingUserCodes(); len(c) == 1 {
			code = c[0]
			return true
		}
		return false
	})
	if err := gh.OAuth().AuthorizeDevice(code, "maria"); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("reconciler login did not finish")
	}
	path := filepath.Join(cfg, "stagehand", "token")
	if r.code != 0 || !strings.Contains(r.stdout, "First copy your one-time code: "+code) || !strings.Contains(r.stdout, "saved in "+path) {
		t.Fatalf("login: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved token %v %v, want mode 0600", fi, err)
	}
	total, early := gh.OAuth().DevicePolls()
	if early != 0 || total < 2 {
		t.Errorf("device polls: %d, %d too early; want at least 2 (one slowed down) and none early", total, early)
	}
	// The API commands pick the saved token up, and it is maria's.
	tok, err := command.UserToken(context.Background(), os.LookupEnv, command.TokenFlag{Flag: "--token-file", User: "--server"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", gh.URL()+"/user", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := gh.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var u struct{ Login string }
	if err := json.NewDecoder(resp.Body).Decode(&u); err != nil || u.Login != "maria" {
		t.Errorf("GET /user with the saved token = %+v %v, want maria", u, err)
	}
}

func TestLoginRefuses(t *testing.T) {
	t.Setenv("STAGEHAND_GITHUB_CLIENT_ID", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"login"}, "--client-id is required"},
		{[]string{"login", "--client-id", "x", "--github-url", "github.com"}, "want an http(s) URL"},
	} {
		if _, stderr, code := runReconciler(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
