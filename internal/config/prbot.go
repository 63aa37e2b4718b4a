package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
)

// Prbot is the file `prbot serve --config` reads (strict YAML: unknown keys
// are errors). Secrets come from files, never inline.
//
//	github:
//	  apiURL: ""                          # GitHub Enterprise: https://ghe.example.com/api/v3 (empty: api.github.com)
//	  owner: acme                         # the manifests repository
//	  repo: manifests
//	  app: {appID: 1, installationID: 2, privateKeyFile: /secrets/app/private-key.pem}
//	  tokenFile: ""                       # instead of app: a file holding a token
//	  webhookSecretFile: /secrets/webhook/secret   # required: webhooks are always verified
//	base: main                            # base branch of the manifests repository
//	root: .                               # directory holding environments/ and pipeline.yaml
//	listen: ":8080"                       # serves POST <webhookPath> and GET /healthz
//	webhookPath: /webhook/github
//	upstreamOwner: ""                     # organisation of upstream repositories (default github.owner)
//	webURL: ""                            # web root for compare links (default: derived from apiURL)
//	locks:                                # optional: the reconciler's lock API
//	  server: https://stagehand.example.com
//	  tokenFile: /secrets/api/token
//	merge:
//	  method: merge                       # merge, squash or rebase
//	  requiredChecks: []                  # check runs / statuses that must have succeeded before an auto-merge
//	historyDepth: 50                      # commits looked back through for the earlier stage's success
//	resync: 10m                           # re-evaluate everything this often (0s: only on events)
//	manifest:
//	  allowUnknownKeys: false             # as in reconciler.yaml: unknown keys in manifest files are errors
//	http: {readHeaderTimeout: 10s, readTimeout: 30s, writeTimeout: 1m, idleTimeout: 2m, maxHeaderBytes: 65536}   # as reconciler.yaml's server.http
//	oidc:                                 # optional: the keyless bump API, POST /api/v1/bumps
//	  issuers:                            # CI systems whose ID tokens are trusted
//	    - url: https://token.actions.githubusercontent.com
//	      audience: stagehand             # the aud the CI job asks for
//	      claims: github                  # github or gitlab: which claims name the repository, ref, workflow, event
//	      namespaces: [acme]              # owners/groups whose repositories are trusted (github default: upstreamOwner)
//	    - {url: https://gitlab.com, audience: stagehand, claims: gitlab, namespaces: [acme-group]}
//	  keyRefresh: 30s                     # least time between two key set fetches triggered by an unknown key
//	  caFile: ""                          # PEM bundle trusted for the issuers' TLS besides the system roots
type Prbot struct {
	GitHub        PrbotGitHub `json:"github"`
	Base          string      `json:"base"`
	Root          string      `json:"root"`
	Listen        string      `json:"listen"`
	WebhookPath   string      `json:"webhookPath"`
	UpstreamOwner string      `json:"upstreamOwner"`
	WebURL        string      `json:"webURL"`
	Locks         *PrbotLocks `json:"locks,omitempty"`
	Merge         PrbotMerge  `json:"merge"`
	HistoryDepth  int         `json:"historyDepth"`
	Resync        *Duration   `json:"resync,omitempty"`
	// Manifest is reconciler.yaml's manifest: section, with the same keys
	// and defaults: set it as the reconciler of the same repository has it,
	// so the bot refuses what the reconciler would refuse.
	Manifest Manifest   `json:"manifest"`
	OIDC     *PrbotOIDC `json:"oidc,omitempty"`
	// HTTP is the server's limits, with the keys and defaults of
	// reconciler.yaml's server.http.
	HTTP HTTP `json:"http"`
	// Tracing is where prbot serve sends its traces, with the keys of
	// reconciler.yaml's tracing (off by default).
	Tracing Tracing `json:"tracing"`
}

// PrbotOIDC turns on the keyless bump API.
type PrbotOIDC struct {
	Issuers    []oidc.Issuer `json:"issuers"`
	KeyRefresh *Duration     `json:"keyRefresh,omitempty"`
	// CAFile is a PEM bundle of certificate authorities trusted for the
	// issuers' TLS, beside the system roots (GitHub Enterprise Server or a
	// self-managed GitLab behind a private CA).
	CAFile string `json:"caFile,omitempty"`
}

// PrbotGitHub says which repository the bot works on and how it authenticates.
type PrbotGitHub struct {
	APIURL            string     `json:"apiURL"`
	Owner             string     `json:"owner"`
	Repo              string     `json:"repo"`
	App               *GitHubApp `json:"app,omitempty"`
	TokenFile         string     `json:"tokenFile"`
	WebhookSecretFile string     `json:"webhookSecretFile"`
}

// PrbotLocks points at the reconciler's lock API.
type PrbotLocks struct {
	Server    string `json:"server"`
	TokenFile string `json:"tokenFile"`
}

// PrbotMerge says how the bot merges.
type PrbotMerge struct {
	Method         string   `json:"method"`
	RequiredChecks []string `json:"requiredChecks"`
}

// LoadPrbot reads and checks a serve configuration file.
func LoadPrbot(path string) (*Prbot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading prbot config: %w", err)
	}
	c, err := ParsePrbot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParsePrbot parses a serve configuration strictly, fills in defaults and
// checks it; all problems are reported together.
func ParsePrbot(data []byte) (*Prbot, error) {
	var c Prbot
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("parsing prbot config: %w", err)
	}
	c.defaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// defaults fills in what the configuration leaves out (see prbot serve --help).
func (c *Prbot) defaults() {
	if c.Base == "" {
		c.Base = "main"
	}
	if c.Root == "" {
		c.Root = "."
	}
	if c.Listen == "" {
		c.Listen = ":8080"
	}
	if c.WebhookPath == "" {
		c.WebhookPath = "/webhook/github"
	}
	if c.Merge.Method == "" {
		c.Merge.Method = "merge"
	}
	if c.HistoryDepth == 0 {
		c.HistoryDepth = 50
	}
	if c.Resync == nil {
		c.Resync = &Duration{Duration: 10 * time.Minute}
	}
	c.HTTP.Default()
	if c.OIDC != nil && c.OIDC.KeyRefresh == nil {
		c.OIDC.KeyRefresh = &Duration{Duration: oidc.MinRefresh}
	}
}

func (o *PrbotOIDC) validate(bad func(string, ...any)) {
	if len(o.Issuers) == 0 {
		bad("oidc.issuers: want at least one issuer (or leave oidc out to turn the bump API off)")
	}
	seen := map[string]bool{}
	for i, is := range o.Issuers {
		at := fmt.Sprintf("oidc.issuers[%d]", i)
		if u, err := url.Parse(is.URL); err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("%s.url %q: want an https:// issuer URL, exactly as the tokens' iss claim", at, is.URL)
		}
		if seen[is.URL] {
			bad("%s.url %q: issuer listed twice", at, is.URL)
		}
		seen[is.URL] = true
		if is.Audience == "" {
			bad("%s.audience: required (the aud the CI job requests, e.g. stagehand)", at)
		}
		switch is.Claims {
		case oidc.ClaimsGitHub:
		case oidc.ClaimsGitLab:
			if len(is.Namespaces) == 0 {
				bad("%s.namespaces: required for gitlab issuers (the groups whose projects may bump)", at)
			}
		default:
			bad("%s.claims %q: want github or gitlab", at, is.Claims)
		}
		for j, ns := range is.Namespaces {
			if ns == "" || strings.HasPrefix(ns, "/") || strings.HasSuffix(ns, "/") {
				bad("%s.namespaces[%d] %q: want an owner or group path such as acme or acme/platform", at, j, ns)
			}
		}
	}
	if o.KeyRefresh.Duration < time.Second {
		bad("oidc.keyRefresh %s: want at least 1s (tokens naming unknown key ids would fetch the issuer's keys on every request)", o.KeyRefresh.Duration)
	}
}

// validate reports every problem of a defaulted configuration together.
func (c *Prbot) validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	g := c.GitHub
	if g.Owner == "" || g.Repo == "" {
		bad("github.owner and github.repo are required")
	}
	switch {
	case g.App == nil && g.TokenFile == "":
		bad("github.app (appID, installationID, privateKeyFile) or github.tokenFile is required")
	case g.App != nil && g.TokenFile != "":
		bad("github.app and github.tokenFile are mutually exclusive")
	case g.App != nil && (g.App.AppID == 0 || g.App.InstallationID == 0 || g.App.PrivateKeyFile == ""):
		bad("github.app needs appID, installationID and privateKeyFile")
	}
	if g.WebhookSecretFile == "" {
		bad("github.webhookSecretFile is required: webhooks are always verified")
	}
	if !strings.HasPrefix(c.WebhookPath, "/") {
		bad("webhookPath %q: must start with /", c.WebhookPath)
	}
	switch c.Merge.Method {
	case "merge", "squash", "rebase":
	default:
		bad("merge.method %q: want merge, squash or rebase", c.Merge.Method)
	}
	if c.HistoryDepth < 1 {
		bad("historyDepth %d: must be at least 1", c.HistoryDepth)
	}
	if c.Resync.Duration < 0 {
		bad("resync %s: must not be negative", c.Resync.Duration)
	}
	if c.Locks != nil && (c.Locks.Server == "" || c.Locks.TokenFile == "") {
		bad("locks needs server and tokenFile")
	}
	if c.OIDC != nil {
		c.OIDC.validate(bad)
	}
	c.HTTP.Validate("http", func(field, format string, a ...any) { bad(field+": "+format, a...) })
	c.Tracing.Validate("tracing", func(field, format string, a ...any) { bad(field+": "+format, a...) })
	if len(errs) > 0 {
		return errors.New("invalid prbot config: " + strings.Join(errs, "; "))
	}
	return nil
}
