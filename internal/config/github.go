package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// validate checks the github section: the App credentials are complete, URLs are absolute http(s)
// URLs, teams are "org/slug", and owner/repo are set whenever GitHub is used at all.
func (g *GitHub) validate(bad func(field, format string, a ...any)) {
	used := g.App != nil || g.WebhookSecretFile != "" || g.APIURL != "" || g.Owner != "" || g.Repo != ""
	if used && g.Owner == "" {
		bad("github.owner", "required when github is configured (the manifests repository's owner)")
	}
	if used && g.Repo == "" {
		bad("github.repo", "required when github is configured (the manifests repository's name)")
	}
	if strings.Contains(g.Repo, "/") {
		bad("github.repo", "%q: give the name only; the owner goes in github.owner", g.Repo)
	}
	if a := g.App; a != nil {
		if a.AppID <= 0 {
			bad("github.app.appID", "must be a positive GitHub App id, got %d", a.AppID)
		}
		if a.InstallationID <= 0 {
			bad("github.app.installationID", "must be a positive installation id, got %d", a.InstallationID)
		}
		if a.PrivateKeyFile == "" {
			bad("github.app.privateKeyFile", "required (the App's PEM private key, mounted from a Secret)")
		}
	}
	for field, v := range map[string]string{"github.apiURL": g.APIURL, "github.detailsURL": g.DetailsURL} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(field, "%q is not an absolute http(s) URL", v)
		}
	}
	for field, v := range map[string]string{"github.deployments.environmentURL": g.Deployments.EnvironmentURL,
		"github.deployments.logURL": g.Deployments.LogURL} {
		if v == "" {
			continue
		}
		if err := checkURLTemplate(v); err != nil {
			bad(field, "%q: %v", v, err)
		}
	}
	if g.Deployments.Enabled && g.App == nil {
		bad("github.deployments.enabled", "needs github.app (deployments are written as the GitHub App, with its Deployments permission)")
	}
	if n := g.WebhookMaxBodyBytes; n != 0 && (n < 1<<10 || n > 25<<20) {
		bad("github.webhookMaxBodyBytes", "must be between 1024 and 26214400 bytes (GitHub's own cap, 25 MiB), got %d", n)
	}
	if n := g.Previews.Workers; n < 0 || n > 16 {
		bad("github.previews.workers", "must be between 1 and 16 (0 keeps the default, 1), got %d", n)
	}
	if d := g.Previews.Timeout.Duration; d < 0 || d > time.Hour {
		bad("github.previews.timeout", "must be positive and at most 1h (0 keeps the default, 2m), got %s", d)
	}
	for i, t := range g.Approvers.Teams {
		org, slug, ok := strings.Cut(t, "/")
		if !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
			bad("github.approvers.teams", "entry %d %q: want org/team-slug, e.g. acme/sre", i, t)
		}
	}
}

// URLTemplatePlaceholders are what a github.deployments URL template may contain.
var URLTemplatePlaceholders = []string{"{env}", "{revision}"}

// ExpandURLTemplate replaces {env} and {revision} in tmpl, escaping the values for a URL path.
func ExpandURLTemplate(tmpl, env, revision string) string {
	return strings.NewReplacer("{env}", url.PathEscape(env), "{revision}", url.PathEscape(revision)).Replace(tmpl)
}

// checkURLTemplate accepts a template whose expansion is an absolute http(s) URL and whose only braces
// are the placeholders {env} and {revision}.
func checkURLTemplate(tmpl string) error {
	rest := tmpl
	for _, p := range URLTemplatePlaceholders {
		rest = strings.ReplaceAll(rest, p, "")
	}
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("unknown placeholder; accepted: %s", strings.Join(URLTemplatePlaceholders, ", "))
	}
	u, err := url.Parse(ExpandURLTemplate(tmpl, "prod", "0123456789abcdef0123456789abcdef01234567"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http(s) URL")
	}
	return nil
}
