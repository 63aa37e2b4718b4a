package api

// Default per-token rate limit of /api/: a steady 20 requests a second, in
// bursts of up to 100 (CI jobs checking locks in parallel share one token).
const (
	DefaultRatePerSecond = 20
	DefaultRateBurst     = 100
)
