package promote

import "fmt"

// Limits of a pipeline file. pipeline.yaml is read by every replica on every
// revision and by prbot on every event, and its sequences are kept in each
// environment's state: a file far beyond any real pipeline is refused before
// it costs memory, and a file with many problems is answered with the first
// of them.
const (
	// MaxFileSize is the largest pipeline file accepted (real ones are a
	// few KiB).
	MaxFileSize = 1 << 20
	// MaxStages is the most stages a pipeline may have.
	MaxStages = 100
	// MaxTasks is the most tasks a stage's sequence may have.
	MaxTasks = 100
	// maxErrors is how many problems are reported; the rest are counted.
	maxErrors = 50
)

// omittedError says how many problems were not reported.
func omittedError(file string, n int) Error {
	return Error{File: file, Message: fmt.Sprintf("... and %d more problems", n)}
}
