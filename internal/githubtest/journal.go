package githubtest

import (
	"fmt"
	"sync"
)

// journal is what the server saw: every request, and every breach of GitHub's contract (the test fails on
// those at cleanup).
type journal struct {
	mu         sync.Mutex
	requests   []Request
	violations []string
}

func (j *journal) record(r Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.requests = append(j.requests, r)
}

func (j *journal) all() []Request {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Request(nil), j.requests...)
}

func (j *journal) violation(format string, a ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.violations = append(j.violations, fmt.Sprintf(format, a...))
}

// take returns and forgets the violations seen so far.
func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	v := j.violations
	j.violations = nil
	return v
}
