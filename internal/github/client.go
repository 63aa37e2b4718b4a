package github

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/stagehand-gitops/stagehand/internal/clock"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/ghapp"
)

// Client talks to one repository (the manifests repository) on GitHub or GitHub Enterprise: the connection
// (authentication, retries, the request budget, GitHub's clock) and the commit authors of a range; who may
// approve is its Approvers', the plans' check runs its Checks'.
type Client struct {
	rest  *gh.Client
	owner string
	repo  string
	appID int64 // 0 when authenticated with a token

	approvers *Approvers
	checks    *Checks
	budget    *budget
	// clock is GitHub's, followed from the Date of every answer off the network.
	clock *clock.Remote
}

// New builds a client from the github section of the configuration: github.apiURL (empty: api.github.com;
// GitHub Enterprise and tests give theirs, with or without /api/v3), the App credentials in github.app (the
// installation token is cached and renewed on GitHub's clock, internal/ghapp), github.owner/repo, the approvers rule and
// github.detailsURL (the reconciler's public API URL, linked from check runs).
func New(cfg config.GitHub, opts ...Option) (*Client, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring GitHub client: %w", err)
	}
	if cfg.Owner == "" || cfg.Repo == "" {
		return nil, errors.New("configuring GitHub client: github.owner and github.repo are required")
	}
	b := newBudget()
	ghClock := clock.NewRemote(o.now)
	b.now = ghClock.Now
	// Under authentication: conditional GETs (budget.go), then retries, then the metering of every answer,
	// then GitHub's clock read from the answers as they come off the network (never a cached copy's).
	base := &conditional{base: &retryTransport{base: metered{base: ghClock.Transport(o.transport), budget: b}, policy: o.retry,
		retried: b.retried, now: ghClock.Now}, budget: b}
	var hc *http.Client
	switch {
	case o.token != "" && o.anonymous:
		return nil, errors.New("configuring GitHub client: a token and anonymous reads exclude each other")
	case o.anonymous:
		hc = &http.Client{Transport: base}
	case o.token != "":
		hc = &http.Client{Transport: &tokenTransport{base: base, token: o.token}}
	case cfg.App != nil:
		key, err := os.ReadFile(cfg.App.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading github.app.privateKeyFile: %w", err)
		}
		// The App's JWT and the installation token's renewal on GitHub's clock (internal/ghapp).
		aopts := []ghapp.Option{ghapp.WithClock(ghClock)}
		if cfg.APIURL != "" {
			aopts = append(aopts, ghapp.WithAPIURL(cfg.APIURL))
		}
		tr, err := ghapp.New(base, ghapp.Installation{AppID: cfg.App.AppID, InstallationID: cfg.App.InstallationID, Key: key}, aopts...)
		if err != nil {
			return nil, fmt.Errorf("github.app.privateKeyFile %s: %w", cfg.App.PrivateKeyFile, err)
		}
		hc = &http.Client{Transport: tr}
	default:
		return nil, errors.New("configuring GitHub client: github.app is required (appID, installationID, privateKeyFile)")
	}
	rest := gh.NewClient(hc)
	if cfg.APIURL != "" {
		if rest, err = rest.WithEnterpriseURLs(cfg.APIURL, cfg.APIURL); err != nil {
			return nil, fmt.Errorf("github.apiURL %q: %w", cfg.APIURL, err)
		}
	}
	approvers := &Approvers{rest: rest, owner: cfg.Owner, repo: cfg.Repo, full: cfg.Owner + "/" + cfg.Repo,
		approvers: cfg.Approvers, policies: o.policies}
	checks := &Checks{approvers: approvers, lostClickAfter: o.lostClickAfter,
		api: checkRunAPI{rest: rest, owner: cfg.Owner, repo: cfg.Repo, details: cfg.DetailsURL, now: ghClock.Now}}
	c := &Client{rest: rest, owner: cfg.Owner, repo: cfg.Repo, approvers: approvers, checks: checks, budget: b, clock: ghClock}
	if cfg.App != nil && o.token == "" {
		c.appID = cfg.App.AppID
	}
	return c, nil
}

// Now is the time on GitHub's clock as the client last read it (this host's until a first answer).
func (c *Client) Now() time.Time { return c.clock.Now() }

// REST is the underlying go-github client, for callers that need other endpoints.
func (c *Client) REST() *gh.Client { return c.rest }

// Approvers decides who may approve and who may read.
func (c *Client) Approvers() *Approvers { return c.approvers }

// Checks shows the plans on their check runs.
func (c *Client) Checks() *Checks { return c.checks }

// Repo returns "owner/repo".
func (c *Client) Repo() string { return c.owner + "/" + c.repo }

// tokenTransport adds a static token to every request.
type tokenTransport struct {
	base  http.RoundTripper
	token string
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+t.token)
	return t.base.RoundTrip(r)
}
