package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

var scpLikeURL = regexp.MustCompile(`^(?:[^@/]+@)?[^:/]+:.+$`)

// Validate reports every problem of the source section alone (Config.Validate
// checks it with the rest), each naming its key: for a source section built
// in code rather than loaded.
func (s Source) Validate() error {
	var errs []error
	s.validate(func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	})
	return errors.Join(errs...)
}

// validate checks the source section: URL form, branch name, root, exactly
// poll timing (a schedule, when set, wins over interval), verification
// settings and one credential kind.
func (s *Source) validate(bad func(field, format string, a ...any)) {
	ssh, https := false, false
	if s.URL != "" {
		if strings.Contains(s.URL, "://") {
			u, err := url.Parse(s.URL)
			switch {
			case err != nil:
				bad("source.url", "not a valid URL")
			case u.Scheme == "ssh" || u.Scheme == "git+ssh" || u.Scheme == "ssh+git":
				ssh = true
			case u.Scheme == "https":
				https = true
			case u.Scheme == "http" || u.Scheme == "file":
			default:
				bad("source.url", "unsupported scheme %q; accepted: https, http, ssh, file (or user@host:path)", u.Scheme)
			}
		} else if scpLikeURL.MatchString(s.URL) {
			ssh = true
		} else {
			bad("source.url", "%q is neither a URL (https://, ssh://, file://) nor user@host:path", s.URL)
		}
	}
	if !gitsource.ValidBranch(s.Branch) {
		bad("source.branch", "invalid branch name %q", s.Branch)
	}
	if r := path.Clean(s.Root); strings.HasPrefix(s.Root, "/") || r == ".." || strings.HasPrefix(r, "../") {
		bad("source.root", "%q must be a relative path inside the repository", s.Root)
	}
	if s.Interval.Duration < 0 {
		bad("source.interval", "must not be negative, got %s", s.Interval)
	}
	if s.Schedule != "" {
		if _, err := cron.ParseStandard(s.Schedule); err != nil {
			bad("source.schedule", "invalid cron expression %q: %v", s.Schedule, err)
		}
	}
	if v := s.Verify; v != nil {
		if v.Mode != "head" {
			bad("source.verify.mode", "unknown mode %q; accepted: head", v.Mode)
		}
		if v.KeyringFile == "" && v.AllowedSignersFile == "" {
			bad("source.verify.keyringFile", "keyringFile or allowedSignersFile required when source.verify is set")
		}
	}
	if s.CAFile != "" && s.URL != "" && !https {
		bad("source.caFile", "set, but source.url is not an https URL")
	}
	a := s.Auth
	kinds := 0
	for _, set := range []bool{a.TokenFile != "", a.SSHKeyFile != "", a.GitHubApp != nil} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		bad("source.auth", "tokenFile, sshKeyFile and githubApp are mutually exclusive")
	}
	if a.SSHKeyFile != "" && a.KnownHostsFile == "" {
		bad("source.auth.knownHostsFile", "required with sshKeyFile (host keys are always checked)")
	}
	if a.SSHKeyFile != "" && s.URL != "" && !ssh {
		bad("source.auth.sshKeyFile", "set, but source.url is not an ssh URL")
	}
	if ssh && a.SSHKeyFile == "" {
		bad("source.auth.sshKeyFile", "required for an ssh source.url")
	}
	if g := a.GitHubApp; g != nil {
		if g.AppID <= 0 {
			bad("source.auth.githubApp.appID", "must be a positive GitHub App id, got %d", g.AppID)
		}
		if g.InstallationID <= 0 {
			bad("source.auth.githubApp.installationID", "must be a positive installation id, got %d", g.InstallationID)
		}
		if g.PrivateKeyFile == "" {
			bad("source.auth.githubApp.privateKeyFile", "required (the App's PEM private key, mounted from a Secret)")
		}
	}
}
