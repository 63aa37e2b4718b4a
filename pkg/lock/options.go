package lock

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Option configures New (WithClock), NewClient (WithHTTPClient) or
// NewChecker (TakeOverOwnLocks); each refuses the options of the others.
type Option func(*options) error

// options holds every constructor's settings; given names the options set,
// so that a constructor can refuse one that is not its own.
type options struct {
	now      func() time.Time
	observer Observer
	owner    string
	formerly []string // TakeOverOwnLocks: the owner's names in older builds
	// ownerEqual and maxDurations are the Service's rules for verified callers (rules.go).
	ownerEqual   OwnerEqual
	maxDurations map[Type]time.Duration
	given        Given
}

const (
	optClock        = "WithClock"
	optTakeOver     = "TakeOverOwnLocks"
	optObserver     = "WithObserver"
	optOwnerEqual   = "WithOwnerEqual"
	optMaxDurations = "WithMaxDurations"
)

// WithClock sets the Service's clock for timestamps and expiry (default
// time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("WithClock: clock must not be nil")
		}
		o.now = now
		o.given = append(o.given, optClock)
		return nil
	}
}

// WithObserver makes the Service tell o about every lock it takes and
// every lock it removes (Unlock, Agent.Unlock, Prune), after the storage confirmed it. o
// is called on the caller's goroutine and must return at once.
func WithObserver(o Observer) Option {
	return func(opts *options) error {
		if o == nil {
			return errors.New("WithObserver: observer must not be nil")
		}
		opts.observer = o
		opts.given = append(opts.given, optObserver)
		return nil
	}
}

// TakeOverOwnLocks makes author's deploy locks the Checker's own: Blocking
// and BlockingWithin ignore them, and Hold by author takes over one at
// exactly its path (see Hold). The locks of formerly, names the same holder
// wrote in older builds, are its own too. Use it only where one holder of that name
// runs at a time, such as the elected leader of the reconciler daemon with a
// fixed author, so a leader killed mid-apply does not block the next one
// until its lock expires; two CLI runs by one user must still exclude each
// other.
func TakeOverOwnLocks(author string, formerly ...string) Option {
	return func(o *options) error {
		if strings.TrimSpace(author) == "" || slices.ContainsFunc(formerly, func(f string) bool { return strings.TrimSpace(f) == "" }) {
			return errors.New("TakeOverOwnLocks: author must not be empty")
		}
		o.owner, o.formerly = author, formerly
		o.given = append(o.given, optTakeOver)
		return nil
	}
}

// newOptions applies the defaults, then opts, then checks that ctor accepts
// every option given.
func newOptions(ctor string, opts []Option, accepted ...string) (options, error) {
	o := options{now: time.Now, ownerEqual: exactOwner}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	if err := o.given.Check(ctor, accepted...); err != nil {
		return options{}, err
	}
	return o, nil
}

// Given names the options applied to one constructor's settings, so that
// an Option type several constructors share (New, NewChecker and NewClient
// here; NewHandler and NewClient in lockapi) is refused by those that do
// not take it.
type Given []string

// Check returns an error naming the first option given that ctor does not
// take, and the ones it takes (accepted).
func (g Given) Check(ctor string, accepted ...string) error {
	for _, name := range g {
		if !slices.Contains(accepted, name) {
			return fmt.Errorf("%s does not take %s; it takes %s", ctor, name, strings.Join(accepted, ", "))
		}
	}
	return nil
}
