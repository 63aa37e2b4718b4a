// Package httpserve is the one way Stagehand's binaries serve HTTP: an
// http.Server built with every limit set (read, header, write and idle
// timeouts, the largest header block), served until a context ends and then
// shut down within a grace, and the one JSON error body every door answers
// with, {"error": "...", "code": "..."}, unknown routes and wrong methods
// included. internal/api (reconciler run) and prbot serve both use it, each
// configured from its own file with the same keys (config.HTTP). It imports
// no component.
package httpserve
