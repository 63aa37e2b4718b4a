package manifest

import "fmt"

// Default limits of Resolve. They bound the work of one resolution, whoever
// wrote the files: at most 32 MiB are read and 100,000 service entries and
// 100,000 include sites visited, which resolves in well under a second and a
// few hundred MB at worst, while a real repository (a few thousand services
// in a few hundred files) stays far below every limit.
const (
	// DefaultMaxDepth is how deeply includes may nest.
	DefaultMaxDepth = 32
	// DefaultMaxFiles is how many distinct files one environment may read.
	DefaultMaxFiles = 10000
	// DefaultMaxIncludes is how many times files may be included in all,
	// counting a file once per place that includes it.
	DefaultMaxIncludes = 100000
	// DefaultMaxServices is how many service entries one environment may
	// visit, counting a file's entries once per place that includes it.
	DefaultMaxServices = 100000
	// DefaultMaxFileSize is the largest manifest file, in bytes.
	DefaultMaxFileSize = 4 << 20
	// DefaultMaxBytes is how many bytes one environment may read in all
	// (each distinct file counted once).
	DefaultMaxBytes = 32 << 20
	// DefaultMaxErrors is how many problems are reported before the rest
	// are only counted.
	DefaultMaxErrors = 50
)

type options struct {
	allowUnknownKeys bool
	maxDepth         int
	maxFiles         int
	maxIncludes      int
	maxServices      int
	maxFileSize      int64
	maxBytes         int64
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

// MaxFiles sets how many distinct files one environment may read (default
// DefaultMaxFiles); the root manifest counts.
func MaxFiles(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max files: %d is less than 1", n)
		}
		o.maxFiles = n
		return nil
	}
}

// MaxIncludes sets how many include sites one environment may visit, counting
// a file once per place that includes it (default DefaultMaxIncludes): it
// bounds diamonds, where a few small files include each other many times.
func MaxIncludes(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max includes: %d is less than 1", n)
		}
		o.maxIncludes = n
		return nil
	}
}

// MaxServices sets how many service entries one environment may visit,
// counting a file's entries once per place that includes it (default
// DefaultMaxServices). A file defining more is refused as it is decoded.
func MaxServices(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max services: %d is less than 1", n)
		}
		o.maxServices = n
		return nil
	}
}

// MaxBytes sets how many bytes one environment may read in all, each
// distinct file counted once (default DefaultMaxBytes).
func MaxBytes(n int64) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("setting max bytes: %d is less than 1", n)
		}
		o.maxBytes = n
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
		maxIncludes: DefaultMaxIncludes,
		maxServices: DefaultMaxServices,
		maxFileSize: DefaultMaxFileSize,
		maxBytes:    DefaultMaxBytes,
		maxErrors:   DefaultMaxErrors,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}
