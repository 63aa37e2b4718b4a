package github

import (
	"bytes"
	"fmt"
	"testing"
)

// TestCacheBounded: the copies kept for conditional requests stay under
// their byte budget, and an answer too large to keep is not kept.
func TestCacheBounded(t *testing.T) {
	c := &conditional{}
	body := bytes.Repeat([]byte("x"), maxCachedBody/2)
	for i := range 2 * maxCachedBytes / len(body) {
		c.store(fmt.Sprint(i), cachedResponse{etag: "e", raw: body})
	}
	if c.bytes > maxCachedBytes || len(c.cache) != len(c.order) {
		t.Errorf("kept %d bytes in %d copies (%d in order), want at most %d bytes", c.bytes, len(c.cache), len(c.order), maxCachedBytes)
	}
	c.store("huge", cachedResponse{etag: "e", raw: make([]byte, maxCachedBody+1)})
	if _, ok := c.cache["huge"]; ok {
		t.Error("an answer over maxCachedBody was kept")
	}
}
