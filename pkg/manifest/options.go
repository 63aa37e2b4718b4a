package manifest

import "fmt"

// Default limits of Resolve.
const (
	DefaultMaxDepth    = 32
	DefaultMaxFiles    = 10000
	DefaultMaxFileSize = 4 << 20
	DefaultMaxErrors   = 50
)

type options struct {
	allowUnknownKeys bool
	maxDepth         int
	maxFiles         int
	maxFileSize      int64
	maxErrors        int
}

// Option configures Resolve.
type Option func(*options) error

// AllowUnknownKeys turns unknown keys from errors into warnings.
func AllowUnknownKeys() Option {
	return func(o *options) error { o.allowUnknownKeys = true; return nil }
}

// MaxDepth sets how deeply includes may nest (the root manifest is depth 0).
func MaxDepth(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("setting max include depth: %d is negative", n)
		}
		o.maxDepth = n
		return nil
	}
}

// MaxFiles sets how many files one environment may read, counting a file once
// per place that includes it.
func MaxFiles(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max files: %d is less than 1", n)
		}
		o.maxFiles = n
		return nil
	}
}

// MaxFileSize sets the largest manifest file accepted, in bytes.
func MaxFileSize(n int64) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max file size: %d is less than 1", n)
		}
		o.maxFileSize = n
		return nil
	}
}

// MaxErrors sets how many problems one run reports before it stops adding
// more to the ErrorList.
func MaxErrors(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max errors: %d is less than 1", n)
		}
		o.maxErrors = n
		return nil
	}
}

func buildOptions(opts []Option) (options, error) {
	o := options{
		maxDepth:    DefaultMaxDepth,
		maxFiles:    DefaultMaxFiles,
		maxFileSize: DefaultMaxFileSize,
		maxErrors:   DefaultMaxErrors,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}
