package lockapi

import (
	"errors"
	"net/http"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Option configures NewHandler or NewClient; each refuses the other's.
type Option func(*options) error

// options holds both constructors' settings; given names the options set,
// so that a constructor can refuse one that is not its own.
type options struct {
	http   *http.Client
	caller func(*http.Request) (lock.Caller, error)
	// errorWriter answers a handler's errors (WithErrorWriter).
	errorWriter func(http.ResponseWriter, error)
	given       lock.Given
}

const (
	optHTTPClient  = "WithHTTPClient"
	optCaller      = "WithCaller"
	optErrorWriter = "WithErrorWriter"
)

// WithCaller makes NewHandler take the caller of each request from who:
// the server mounting the handler has verified it. The caller is the
// author of the locks it takes (an author in the request body is
// ignored), and removes only its own live locks unless lock.Caller.Admin.
func WithCaller(who func(*http.Request) (lock.Caller, error)) Option {
	return func(o *options) error {
		if who == nil {
			return errors.New("WithCaller: nil function")
		}
		o.caller = who
		o.given = append(o.given, optCaller)
		return nil
	}
}

// WithErrorWriter makes NewHandler answer its errors with write: the
// status, code and body of the server that mounts the handler, so that the
// lock routes answer as its other routes do. Locks refusing a request are
// still answered 423 with the locks (a CheckResponse). Without it, errors
// are answered {"error", "code"} with StatusOf's status and code.
func WithErrorWriter(write func(w http.ResponseWriter, err error)) Option {
	return func(o *options) error {
		if write == nil {
			return errors.New("WithErrorWriter: nil function")
		}
		o.errorWriter = write
		o.given = append(o.given, optErrorWriter)
		return nil
	}
}

// WithHTTPClient sets the Client's HTTP client (default
// http.DefaultClient).
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("WithHTTPClient: http client must not be nil")
		}
		o.http = c
		o.given = append(o.given, optHTTPClient)
		return nil
	}
}

// newOptions applies the defaults, then opts, then checks that ctor accepts
// every option given.
func newOptions(ctor string, opts []Option, accepted ...string) (options, error) {
	o := options{http: http.DefaultClient}
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
