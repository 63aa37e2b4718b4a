//go:build race

package policy

// raceEnabled: the race detector is on (sync.Pool then drops what it is given at random).
const raceEnabled = true
