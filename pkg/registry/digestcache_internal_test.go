package registry

import (
	"fmt"
	"testing"
	"time"
)

// TestRegistryStateSweeps: expired digests and keychains are dropped once a
// TTL, not at every insert, so the cache stays within what two TTLs resolved
// and a pass of many images does not sweep the whole map per image.
func TestRegistryStateSweeps(t *testing.T) {
	now := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	s := newStore(20, time.Minute)
	s.now = func() time.Time { return now }
	s.keychains[keychainKey{pull: Pull{target: "gone"}}] = cachedKeychain{expires: now.Add(time.Minute)}
	for i := range 100 {
		s.remember(cacheKey{image: fmt.Sprint("old", i)}, "sha256:a")
	}
	if s.swept != now {
		t.Fatalf("first remember swept at %v, want %v", s.swept, now)
	}
	now = now.Add(30 * time.Second)
	s.remember(cacheKey{image: "new"}, "sha256:b")
	if len(s.digests) != 101 || s.swept.Add(30*time.Second) != now {
		t.Errorf("within the TTL: %d digests, swept at %v; want 101, no new sweep", len(s.digests), s.swept)
	}
	now = now.Add(45 * time.Second) // the old ones expired, "new" has not
	s.remember(cacheKey{image: "newer"}, "sha256:c")
	if len(s.digests) != 2 || len(s.keychains) != 0 {
		t.Errorf("after a TTL: %d digests and %d keychains, want 2 and 0", len(s.digests), len(s.keychains))
	}
	if d, ok := s.cached(cacheKey{image: "new"}); !ok || d != "sha256:b" {
		t.Errorf("cached(new) = %q, %v", d, ok)
	}
}
