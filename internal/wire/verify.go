package wire

import (
	"fmt"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// VerifyOptions translates reconciler.yaml's verification into the options
// of the verifier that runs pipeline.yaml's test and evaluation tasks:
// verification.allowAddresses opens the ranges its default client refuses.
func VerifyOptions(v config.Verification) ([]verify.Option, error) {
	allow, err := v.AllowedPrefixes()
	if err != nil {
		return nil, fmt.Errorf("configuring verification: %w", err)
	}
	if len(allow) == 0 {
		return nil, nil
	}
	return []verify.Option{verify.WithAllowedAddresses(allow...)}, nil
}
