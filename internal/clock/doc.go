// Package clock is where a process's wall time comes from: Local, this
// host's clock, and Remote, another machine's clock followed from the Date
// headers of its HTTP responses (the Kubernetes API server's, GitHub's), so
// that the times a replica records or compares with another's do not depend
// on how far its own clock is off.
package clock
