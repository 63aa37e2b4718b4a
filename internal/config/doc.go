// Package config loads and validates the reconciler's configuration file,
// reconciler.yaml. Unknown keys are errors; secrets are referenced by file path,
// never given inline.
package config
