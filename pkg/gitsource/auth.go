package gitsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// DefaultTokenUser is the HTTPS user name sent with a token when
// WithUsername is not set; GitHub (installation tokens included), and most
// servers that take a token as password, accept it.
const DefaultTokenUser = "x-access-token"

// auth produces fresh credentials for each poll: the token source is asked
// again (rotated files, refreshed short-lived tokens) and SSH keys and
// known_hosts are re-read.
type auth struct {
	username   string
	password   string // from the URL's user info, if any
	token      TokenSource
	sshKeyFile string
	knownHosts string
	redact     *redactor
}

// newAuth checks the credentials of o against the URL: at most one kind,
// an SSH key for (and only for) an ssh URL, always with known_hosts.
func newAuth(u *parsedURL, o *options, r *redactor) (*auth, error) {
	a := &auth{
		username:   o.username,
		token:      o.token,
		sshKeyFile: o.sshKeyFile,
		knownHosts: o.knownHosts,
		redact:     r,
	}
	if u.password != "" {
		a.password = u.password
		r.add(u.password)
		if a.username == "" {
			a.username = u.user
		}
	}
	if a.token != nil && a.password != "" || (a.token != nil || a.password != "") && a.sshKeyFile != "" {
		return nil, errors.New("credentials: use only one of a token source (or credentials in the URL) and an SSH key")
	}
	if a.sshKeyFile != "" {
		if !u.ssh {
			return nil, fmt.Errorf("SSH key: set, but %s is not an ssh URL", u.redacted)
		}
		if a.knownHosts == "" {
			return nil, errors.New("known_hosts file: required with an SSH key (host keys are always checked)")
		}
	}
	if u.ssh && a.sshKeyFile == "" {
		return nil, fmt.Errorf("SSH key: required for ssh URL %s", u.redacted)
	}
	return a, nil
}

// method returns the credentials for one operation.
func (a *auth) method(ctx context.Context, host string) (transport.AuthMethod, error) {
	switch {
	case a.token != nil:
		tok, err := a.token(ctx)
		if err != nil {
			return nil, err
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
			return nil, fmt.Errorf("loading SSH key %s: %w", a.sshKeyFile, err)
		}
		db, err := gitssh.NewKnownHostsDb(a.knownHosts)
		if err != nil {
			return nil, fmt.Errorf("loading known_hosts %s: %w", a.knownHosts, err)
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
		return nil, errors.New("url: required")
	}
	if !strings.Contains(raw, "://") {
		m := scpLike.FindStringSubmatch(raw)
		if m == nil {
			return nil, fmt.Errorf("url: %q is neither a URL (https://, ssh://, file://) nor user@host:path", raw)
		}
		return &parsedURL{clean: raw, redacted: raw, user: m[1], ssh: true, hostPort: net.JoinHostPort(m[2], "22")}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL itself may hold a password: leave it out
		}
		return nil, fmt.Errorf("url: invalid URL: %w", err)
	}
	p := &parsedURL{}
	switch u.Scheme {
	case "http", "https", "file":
	case "ssh", "git+ssh", "ssh+git":
		p.ssh = true
	default:
		return nil, fmt.Errorf("url: unsupported scheme %q; accepted: https, http, ssh, file", u.Scheme)
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
