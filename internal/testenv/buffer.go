package testenv

import (
	"bytes"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Buffer is a bytes.Buffer safe for a process writing while the test reads:
// give it as a child's Stdout and Stderr.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Logger is a logger that writes its lines here: a component's log kept for
// a failure's report, which (unlike t.Log) may be written after the test.
func (s *Buffer) Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		_, _ = s.Write([]byte(prefix + " " + args + "\n"))
	}, funcr.Options{})
}
