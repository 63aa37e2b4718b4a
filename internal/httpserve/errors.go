package httpserve

import (
	"encoding/json"
	"net/http"
)

// Error is the body of every answer other than success:
// {"error": "what went wrong and what would be accepted", "code": "TooLarge"}.
type Error struct {
	Error string `json:"error"`
	// Code names the kind of error for programs (Code* below, or a door's
	// own); absent in bodies written before it existed.
	Code string `json:"code,omitempty"`
}

// Error codes shared by every door.
const (
	CodeBadRequest       = "BadRequest"
	CodeUnauthorized     = "Unauthorized"
	CodeForbidden        = "Forbidden"
	CodeNotFound         = "NotFound"
	CodeMethodNotAllowed = "MethodNotAllowed"
	CodeConflict         = "Conflict"
	CodeTooLarge         = "TooLarge"
	CodeUnsupportedType  = "UnsupportedMediaType"
	CodeTooManyRequests  = "TooManyRequests"
	CodeUnavailable      = "Unavailable"
	CodeInternal         = "Internal"
)

// WriteJSON writes v as indented JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client is gone if this fails
}

// WriteError writes the error body with status, code and msg.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	WriteJSON(w, status, Error{Error: msg, Code: code})
}

// CodeOf is the shared code of an HTTP status (CodeInternal for any other
// 5xx, CodeBadRequest for any other 4xx).
func CodeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedType
	case http.StatusTooManyRequests:
		return CodeTooManyRequests
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return CodeUnavailable
	}
	if status >= 500 {
		return CodeInternal
	}
	return CodeBadRequest
}

// Routes returns mux, except that a request no route matches gets the
// error body (404, or 405 with Allow when only the method is wrong)
// instead of the mux's plain text.
func Routes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &statusOf{header: http.Header{}}
		h.ServeHTTP(rec, r) // the mux's own answer: 404 or 405 with Allow
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		status := rec.status
		if status == 0 || status < 400 {
			status = http.StatusNotFound
		}
		msg := "no route " + r.URL.Path
		if status == http.StatusMethodNotAllowed {
			msg = r.Method + " " + r.URL.Path + ": method not allowed; allowed: " + rec.header.Get("Allow")
		}
		WriteError(w, status, CodeOf(status), msg)
	})
}

// statusOf keeps the status and headers a handler answers with and drops
// its body.
type statusOf struct {
	header http.Header
	status int
}

func (s *statusOf) Header() http.Header { return s.header }

func (s *statusOf) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return len(b), nil
}

func (s *statusOf) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
}
