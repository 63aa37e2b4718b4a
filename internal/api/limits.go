package api

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Default per-token rate limit of /api/: a steady 20 requests a second, in
// bursts of up to 100 (CI jobs checking locks in parallel share one token).
const (
	DefaultRatePerSecond = 20
	DefaultRateBurst     = 100
)

// tooMany answers 429 with Retry-After in whole seconds (at least 1).
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Max(1, math.Ceil(wait.Seconds())))))
	writeError(w, http.StatusTooManyRequests, "too many requests for this token; retry after the Retry-After seconds")
}
