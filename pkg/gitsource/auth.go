package gitsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// DefaultTokenUser is the HTTPS user name sent with a token when
// source.auth.username is empty; GitHub, and most servers that take a token
// as password, accept it.
const DefaultTokenUser = "x-access-token"

// auth produces a fresh transport.AuthMethod for each use: token files are
// re-read (rotated Secrets work) and GitHub App installation tokens are
// refreshed by ghinstallation before they expire.
type auth struct {
	username   string
	password   string // from the URL's user info, if any
	tokenFile  string
	sshKeyFile string
	knownHosts string
	app        *ghinstallation.Transport
	redact     *redactor
}

func newAuth(cfg config.Source, u *parsedURL, o *options, r *redactor) (*auth, error) {
	a := &auth{
		username:   cfg.Auth.Username,
		tokenFile:  cfg.Auth.TokenFile,
		sshKeyFile: cfg.Auth.SSHKeyFile,
		knownHosts: cfg.Auth.KnownHostsFile,
		redact:     r,
	}
	if u.password != "" {
		a.password = u.password
		r.add(u.password)
		if a.username == "" {
			a.username = u.user
		}
	}
	n := 0
	for _, set := range []bool{a.tokenFile != "" || a.password != "", a.sshKeyFile != "", cfg.Auth.GitHubApp != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("source.auth: use only one of tokenFile (or credentials in the URL), sshKeyFile and githubApp")
	}
	if a.sshKeyFile != "" {
		if !u.ssh {
			return nil, fmt.Errorf("source.auth.sshKeyFile: set, but source.url %s is not an ssh URL", u.redacted)
		}
		if a.knownHosts == "" {
			return nil, errors.New("source.auth.knownHostsFile: required with sshKeyFile (host keys are always checked)")
		}
	}
	if u.ssh && a.sshKeyFile == "" {
		return nil, fmt.Errorf("source.auth.sshKeyFile: required for ssh URL %s", u.redacted)
	}
	if app := cfg.Auth.GitHubApp; app != nil {
		if app.AppID == 0 || app.InstallationID == 0 || app.PrivateKeyFile == "" {
			return nil, errors.New("source.auth.githubApp: appID, installationID and privateKeyFile are required")
		}
		tr, err := ghinstallation.NewKeyFromFile(o.httpTransport(), app.AppID, app.InstallationID, app.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("source.auth.githubApp: loading private key %s: %w", app.PrivateKeyFile, err)
		}
		if o.githubAPIURL != "" {
			tr.BaseURL = strings.TrimRight(o.githubAPIURL, "/")
		}
		a.app = tr
	}
	return a, nil
}

// method returns the credentials for one operation.
func (a *auth) method(ctx context.Context, host string) (transport.AuthMethod, error) {
	switch {
	case a.app != nil:
		tok, err := a.app.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("getting GitHub App installation token: %w", err)
		}
		a.redact.add(tok)
		return &githttp.BasicAuth{Username: "x-access-token", Password: tok}, nil
	case a.tokenFile != "":
		tok, err := config.ReadSecret(a.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("source.auth.tokenFile: %w", err)
		}
		a.redact.add(tok)
		user := a.username
		if user == "" {
			user = DefaultTokenUser
		}
		return &githttp.BasicAuth{Username: user, Password: tok}, nil
	case a.password != "":
		return &githttp.BasicAuth{Username: a.username, Password: a.password}, nil
	case a.sshKeyFile != "":
		user := a.username
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, a.sshKeyFile, "")
		if err != nil {
			return nil, fmt.Errorf("source.auth.sshKeyFile: loading %s: %w", a.sshKeyFile, err)
		}
		db, err := gitssh.NewKnownHostsDb(a.knownHosts)
		if err != nil {
			return nil, fmt.Errorf("source.auth.knownHostsFile: loading %s: %w", a.knownHosts, err)
		}
		// Strict: an unknown host or a changed key fails; nothing is ever added.
		keys.HostKeyCallback = db.HostKeyCallback()
		keys.HostKeyAlgorithms = db.HostKeyAlgorithms(host)
		return keys, nil
	}
	return nil, nil
}

// parsedURL is the source URL with any credentials split off.
type parsedURL struct {
	clean    string // what go-git gets: no password
	redacted string // for messages
	user     string
	password string
	ssh      bool
	hostPort string // host:port for known_hosts lookups
}

var scpLike = regexp.MustCompile(`^(?:([^@/]+)@)?([^:/]+):(.*)$`)

func parseURL(raw string) (*parsedURL, error) {
	if raw == "" {
		return nil, errors.New("source.url: required")
	}
	if !strings.Contains(raw, "://") {
		m := scpLike.FindStringSubmatch(raw)
		if m == nil {
			return nil, fmt.Errorf("source.url: %q is neither a URL (https://, ssh://, file://) nor user@host:path", raw)
		}
		return &parsedURL{clean: raw, redacted: raw, user: m[1], ssh: true, hostPort: net.JoinHostPort(m[2], "22")}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL itself may hold a password: leave it out
		}
		return nil, fmt.Errorf("source.url: invalid URL: %w", err)
	}
	p := &parsedURL{}
	switch u.Scheme {
	case "http", "https", "file":
	case "ssh", "git+ssh", "ssh+git":
		p.ssh = true
	default:
		return nil, fmt.Errorf("source.url: unsupported scheme %q; accepted: https, http, ssh, file", u.Scheme)
	}
	if u.User != nil {
		p.user = u.User.Username()
		p.password, _ = u.User.Password()
		if p.password != "" {
			u.User = url.User(p.user)
		}
	}
	p.clean = u.String()
	p.redacted = u.Redacted()
	port := u.Port()
	if port == "" {
		port = "22"
	}
	p.hostPort = net.JoinHostPort(u.Hostname(), port)
	return p, nil
}

func (o *options) httpTransport() http.RoundTripper {
	if o.transport != nil {
		return o.transport
	}
	return http.DefaultTransport
}

// redactor replaces every secret it has seen, and the password part of any
// URL, in error messages.
type redactor struct {
	mu      sync.Mutex
	secrets []string
}

const maxSecrets = 16

func (r *redactor) add(s string) {
	if len(s) < 4 {
		return // too short to redact without mangling messages
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.secrets {
		if have == s {
			return
		}
	}
	r.secrets = append(r.secrets, s)
	if len(r.secrets) > maxSecrets {
		r.secrets = r.secrets[1:]
	}
}

// err wraps err so that its message carries no secret; errors.Is/As still
// see the original chain.
func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	r.mu.Lock()
	secrets := append([]string(nil), r.secrets...)
	r.mu.Unlock()
	msg := redactString(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

var urlPassword = regexp.MustCompile(`(://[^/@\s:]*):[^/@\s]*@`)

func redactString(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "REDACTED")
	}
	return urlPassword.ReplaceAllString(s, "$1:REDACTED@")
}
