package policy

import (
	"sync"

	"github.com/google/cel-go/common/types/ref"
)

// The largest arena a Set keeps for its next decision, in records and field values (about 1 MB): room
// for a plan, history and locks of boundList items each. A decision over a larger input allocates what
// it needs beyond and gives its arena up.
const (
	maxArenaRecords = 8 << 10
	maxArenaVals    = 32 << 10
)

// arena is the memory of one decision's records (the values of plan, revision, history and locks) and
// of their fields' values, handed out in pieces and kept for the set's next decision: a plan of 500
// changes takes some 200 KB, which, allocated anew each decision, cost more with the collections it
// brought than most rules. Nothing made in an arena may be kept past the decision: it is cleared when
// the decision ends (release).
type arena struct {
	p    *provider
	recs []record
	vals []ref.Val
	// wantRecs and wantVals are how much this decision asked for: the next gets that room.
	wantRecs, wantVals int
}

// arenas keeps a Set's arenas between decisions.
type arenas struct {
	p    *provider
	pool sync.Pool
}

func newArenas(p *provider) *arenas { return &arenas{p: p} }

// get is an arena for one decision.
func (as *arenas) get() *arena {
	if a, ok := as.pool.Get().(*arena); ok {
		return a
	}
	return &arena{p: as.p}
}

// release clears a's decision out of it (its records point into the input) and keeps it, with room
// for as much as the decision asked, unless that was more than a Set keeps.
func (as *arenas) release(a *arena) {
	clear(a.recs)
	clear(a.vals)
	if a.wantRecs > maxArenaRecords || a.wantVals > maxArenaVals {
		return
	}
	a.recs, a.vals = grow(a.recs[:0], a.wantRecs), grow(a.vals[:0], a.wantVals)
	a.wantRecs, a.wantVals = 0, 0
	as.pool.Put(a)
}

// grow is s (empty) with room for n.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s
	}
	return make([]T, 0, n)
}

// records are n zeroed records.
func (a *arena) records(n int) []record {
	a.wantRecs += n
	return take(&a.recs, n)
}

// values are n nil values.
func (a *arena) values(n int) []ref.Val {
	a.wantVals += n
	return take(&a.vals, n)
}

// take is the next n elements of *s's room, or a new slice when the room is used up.
func take[T any](s *[]T, n int) []T {
	l := len(*s)
	if l+n > cap(*s) {
		return make([]T, n)
	}
	*s = (*s)[:l+n]
	return (*s)[l : l+n : l+n]
}
