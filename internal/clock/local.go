//go:build !stagehand_faketime

package clock

import "time"

// Local returns this host's wall clock, time.Now. lookup (os.LookupEnv) is
// read only by binaries built with the stagehand_faketime tag, which the
// fault suite uses to run replicas with clocks hours apart; a shipped binary
// ignores it.
func Local(lookup func(string) (string, bool)) (func() time.Time, error) {
	return time.Now, nil
}
