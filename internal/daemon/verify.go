package daemon

import (
	"errors"

	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// WithVerifier makes v run the test and evaluation tasks of every
// environment's sequence (pipeline.yaml) whose properties declare a
// verification (job, http or prometheus; see pkg/verify), in the
// environment's targets. Their properties are checked when the environment
// is planned, before anything is applied.
func WithVerifier(v *verify.Verifier) Option {
	return func(o *options) error {
		if v == nil {
			return errors.New("configuring daemon: nil verifier")
		}
		o.verifier = v
		return nil
	}
}
