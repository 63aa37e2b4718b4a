//go:build stagehand_faketime

package clock

import (
	"fmt"
	"time"
)

// OffsetEnv shifts Local's clock, in binaries built with the
// stagehand_faketime tag only (tests): a Go duration such as "2h" or "-2h".
const OffsetEnv = "STAGEHAND_FAKETIME_OFFSET"

// Local returns time.Now shifted by $STAGEHAND_FAKETIME_OFFSET. This file is
// compiled only with the stagehand_faketime build tag (the fault suite's
// replicas); shipped binaries use local.go, which reads no environment.
func Local(lookup func(string) (string, bool)) (func() time.Time, error) {
	v, ok := lookup(OffsetEnv)
	if !ok || v == "" {
		return time.Now, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a duration such as 2h or -2h: %w", OffsetEnv, v, err)
	}
	return func() time.Time { return time.Now().Add(d) }, nil
}
