package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/robfig/cron/v3"
)

// Option configures a Source.
type Option func(*options) error

type options struct {
	interval   time.Duration
	schedule   cron.Schedule
	username   string
	token      TokenSource
	sshKeyFile string
	knownHosts string
	caBundle   ReadFunc
	keyring    ReadFunc
	// allowedSigners is an OpenSSH allowed-signers file for SSH-signed commits.
	allowedSigners ReadFunc
	cacheDir       string
	jitter         float64
	backoffMin     time.Duration
	backoffMax     time.Duration
	debounce       time.Duration
	timeout        time.Duration
	maxPacks       int
	now            func() time.Time
}

func defaultOptions() options {
	return options{
		interval:   time.Minute,
		jitter:     0.1,
		backoffMin: 5 * time.Second,
		backoffMax: 5 * time.Minute,
		debounce:   100 * time.Millisecond,
		timeout:    2 * time.Minute,
		maxPacks:   256,
		now:        time.Now,
	}
}

// WithCacheDir sets the directory that holds the persistent bare-repository
// cache (one subdirectory per URL and branch; default: the user cache
// directory's stagehand/git).
func WithCacheDir(dir string) Option {
	return func(o *options) error {
		if dir == "" {
			return errors.New("cache directory must not be empty")
		}
		o.cacheDir = dir
		return nil
	}
}

// WithJitter adds up to fraction×interval of random delay to each interval
// poll (default 0.1). Ignored for cron schedules.
func WithJitter(fraction float64) Option {
	return func(o *options) error {
		if fraction < 0 || fraction > 1 {
			return fmt.Errorf("jitter %v: want a fraction between 0 and 1", fraction)
		}
		o.jitter = fraction
		return nil
	}
}

// WithBackoff sets the first retry delay after a failed poll and its cap; the
// delay doubles with each consecutive failure (defaults 5s and 5m).
func WithBackoff(first, max time.Duration) Option {
	return func(o *options) error {
		if first <= 0 || max < first {
			return fmt.Errorf("backoff %s..%s: want 0 < first <= max", first, max)
		}
		o.backoffMin, o.backoffMax = first, max
		return nil
	}
}

// WithDebounce sets the shortest time between the beginnings of a poll and
// of the next one a Trigger causes (default 100ms): a Trigger after a quiet
// spell polls at once, and the triggers that arrive within the window make
// one poll at its end, so a burst of webhooks makes one fetch.
func WithDebounce(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("debounce %s: must not be negative", d)
		}
		o.debounce = d
		return nil
	}
}

// WithClock sets the clock of the times Status reports (checked, fetched,
// failing since, next poll; default time.Now): a process that records times
// on another clock (a server's) passes it, so Status agrees with its other
// records. Waits between polls do not depend on it.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("clock: nil")
		}
		o.now = now
		return nil
	}
}

// WithTimeout bounds each poll (ls-remote plus fetch; default 2m).
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("timeout %s: must be positive", d)
		}
		o.timeout = d
		return nil
	}
}

func defaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory (set one with WithCacheDir): %w", err)
	}
	return filepath.Join(d, "stagehand", "git"), nil
}

// TokenSource returns the HTTPS token to present, as the password of the
// user set with WithUsername (default DefaultTokenUser). It is called before
// every poll, so it can re-read a rotated file or refresh a short-lived
// token; every token it returns is redacted from errors.
type TokenSource func(ctx context.Context) (string, error)

// ReadFunc returns the current content of something read on every use: a
// CA bundle or a keyring. Errors it returns are passed on as they are, so
// it can name where the content comes from.
type ReadFunc func() ([]byte, error)

// File returns a ReadFunc reading the named file.
func File(name string) ReadFunc {
	return func() ([]byte, error) { return os.ReadFile(name) }
}

// WithInterval sets how often Run polls (default one minute, plus jitter).
// WithSchedule takes precedence.
func WithInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("interval %s: must be positive", d)
		}
		o.interval = d
		return nil
	}
}

// WithSchedule makes Run poll on a standard five-field cron schedule
// instead of an interval.
func WithSchedule(spec string) Option {
	return func(o *options) error {
		s, err := cron.ParseStandard(spec)
		if err != nil {
			return fmt.Errorf("schedule: invalid cron expression %q: %w", spec, err)
		}
		o.schedule = s
		return nil
	}
}

// WithUsername sets the user name sent with a token (default
// DefaultTokenUser) or an SSH key (default "git").
func WithUsername(user string) Option {
	return func(o *options) error { o.username = user; return nil }
}

// WithTokenSource authenticates https requests with the token ts returns,
// asked for before every poll.
func WithTokenSource(ts TokenSource) Option {
	return func(o *options) error {
		if ts == nil {
			return errors.New("token source: nil")
		}
		o.token = ts
		return nil
	}
}

// WithSSHKeyFile authenticates an ssh URL with the private key in file
// (read on every poll). The host key is always checked against
// WithKnownHostsFile, which is then required.
func WithSSHKeyFile(file string) Option {
	return func(o *options) error {
		if file == "" {
			return errors.New("SSH key file: empty name")
		}
		o.sshKeyFile = file
		return nil
	}
}

// WithKnownHostsFile sets the known_hosts file the ssh host key is checked
// against, strictly: an unknown host or a changed key fails and nothing is
// ever added.
func WithKnownHostsFile(file string) Option {
	return func(o *options) error {
		if file == "" {
			return errors.New("known_hosts file: empty name")
		}
		o.knownHosts = file
		return nil
	}
}

// WithCABundle trusts, beside the system's roots, the PEM certificate
// authorities read returns for an https URL (a git server with a private
// CA). read is called by New, to check it, and before every poll, so a
// rotated bundle takes effect without a restart.
func WithCABundle(read ReadFunc) Option {
	return func(o *options) error {
		if read == nil {
			return errors.New("CA bundle: nil")
		}
		o.caBundle = read
		return nil
	}
}

// WithVerifyKeyring requires the head commit of every accepted revision to
// carry a valid OpenPGP signature from the armored keyring read returns
// (called on every check, so a rotated keyring takes effect at once);
// other heads are refused with ErrUnverified.
func WithVerifyKeyring(read ReadFunc) Option {
	return func(o *options) error {
		if read == nil {
			return errors.New("verification keyring: nil")
		}
		o.keyring = read
		return nil
	}
}

// WithAllowedSigners accepts, beside (or instead of) an OpenPGP keyring, head
// commits signed with SSH keys (git's gpg.format=ssh) listed in the OpenSSH
// allowed-signers file read returns (called on every check); other heads are
// refused with ErrUnverified.
func WithAllowedSigners(read ReadFunc) Option {
	return func(o *options) error {
		if read == nil {
			return errors.New("allowed signers: nil")
		}
		o.allowedSigners = read
		return nil
	}
}
