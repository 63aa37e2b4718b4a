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

// open records a request as it arrives and returns its place, so a test that sees the request's effect
// (a check run in the world, say) also sees the request counted; set fills in what is learnt later.
func (j *journal) open(r Request) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.requests = append(j.requests, r)
	return len(j.requests) - 1
}

// set replaces the record at i (from open) with what is now known of the request.
func (j *journal) set(i int, r Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.requests[i] = r
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
