package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/api"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/ui"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// webPage builds the web page of server.ui over the daemon (with more
// options: the DORA panel's reporter, the promotions), or nil when it is
// off. With the GitHub App (gh), who may read and approve is decided as
// for check-run clicks: github.approvers and the environment's policy.
func webPage(b *wire.Builder, d *daemon.Daemon, more ...ui.Option) (*ui.Server, error) {
	cfg := b.Config()
	u := cfg.Server.UI
	if !u.On() {
		return nil, nil
	}
	var opts []ui.Option
	if u.DemoLogin != "" {
		opts = append(opts, ui.WithDemoLogin(u.DemoLogin))
	}
	if u.SessionKeyFile != "" {
		key, err := config.ReadSecret(u.SessionKeyFile)
		if err != nil {
			return nil, fmt.Errorf("server.ui.sessionKeyFile: %w", err)
		}
		opts = append(opts, ui.WithSessionKey([]byte(key)))
	}
	if u.OAuth.ClientIDFile != "" {
		id, err := config.ReadSecret(u.OAuth.ClientIDFile)
		if err != nil {
			return nil, fmt.Errorf("server.ui.oauth.clientIDFile: %w", err)
		}
		secret, err := config.ReadSecret(u.OAuth.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("server.ui.oauth.clientSecretFile: %w", err)
		}
		tr, err := b.HTTPTransport() // a GitHub Enterprise Server behind source.caFile's CA
		if err != nil {
			return nil, err
		}
		webURL, apiURL := u.OAuth.WebURL, cfg.GitHub.APIURL
		if webURL == "" {
			webURL = "https://github.com"
		}
		if apiURL == "" {
			apiURL = "https://api.github.com/"
		}
		opts = append(opts, ui.WithOAuth(ui.OAuth{ClientID: id, ClientSecret: secret, WebURL: webURL, APIURL: apiURL,
			Client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}))
	}
	// Asked for every page, event stream and form: GitHub is asked at most once a minute per login and
	// environment, through the cache the API's read rule shares (nil without github.app).
	access, err := b.Access()
	if err != nil {
		return nil, err
	}
	if access != nil {
		opts = append(opts, ui.WithPolicy(access))
	}
	// Break-glass on the page: the API's own rule, the scope break-glass:<env> decided for github:<login>.
	authn, err := b.Authenticator()
	if err != nil {
		return nil, err
	}
	opts = append(opts, ui.WithBreakGlass(authn.MayBreakGlass))
	if cfg.GitHub.Owner != "" && cfg.GitHub.Repo != "" {
		web := u.OAuth.WebURL
		if web == "" {
			web = "https://github.com"
		}
		opts = append(opts, ui.WithCommitURL(strings.TrimSuffix(web, "/")+"/"+cfg.GitHub.Owner+"/"+cfg.GitHub.Repo+"/commit/{revision}"))
	}
	opts = append(opts, ui.WithStages(stageOrder(d, cfg.Source.Root)))
	// "pending for 5m", sessions: on the clock the daemon records times with (the API server's).
	opts = append(opts, ui.WithClock(d.Now, time.Local))
	// An error's page has the status the API answers it with: one table (api.StatusOf).
	opts = append(opts, ui.WithErrorStatus(api.StatusOf))
	return ui.New(d, append(opts, more...)...)
}

// stageOrder reads the stage order from pipeline.yaml at the newest revision
// the daemon fetched (parsed once per revision); nil before the first fetch,
// without a pipeline.yaml, or when it does not parse (the page then keeps the
// configuration's order).
func stageOrder(d *daemon.Daemon, root string) func(context.Context) []string {
	var (
		mu     sync.Mutex
		rev    string
		stages []string
	)
	return func(context.Context) []string {
		snap, ok := d.Source().Latest()
		if !ok {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if snap.Revision != rev {
			rev, stages = snap.Revision, nil
			if pl, err := promote.Load(snap.FS, root); err == nil && pl != nil {
				for _, st := range pl.Stages {
					stages = append(stages, st.Name)
				}
			}
		}
		return stages
	}
}
