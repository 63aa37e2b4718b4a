// Package fault is what goes wrong on purpose in internal/githubtest: Faults answering matching requests with
// GitHub's errors (5xx, secondary and primary rate limits) or slowing them down, latency added to every
// answer, and the primary rate limit every answer reports (X-RateLimit-*), counted as GitHub counts it.
//
//	srv.Faults().Inject(githubtest.Fault{Method: "POST", Route: "/repos/{owner}/{repo}/check-runs", Status: 502, Times: 2})
//	srv.Faults().SetRateLimit(5000, 10)
package fault
