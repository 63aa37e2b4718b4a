package lockapi

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// The REST API, served by Handler under these routes (mount the handler at
// "/api/v1/locks", "/api/v1/locks/" and "/api/v1/check/" without stripping the prefix):
//
//	GET    /api/v1/locks?path=PREFIX            list locks (expired included)
//	POST   /api/v1/locks                        take a lock: a LockRequest; 201, 423 when locked
//	DELETE /api/v1/locks?expired=true&path=P    prune expired locks at and beneath P
//	GET    /api/v1/locks/{path...}[?type=T]     the lock at exactly path (of type T); 404 when none
//	DELETE /api/v1/locks/{path...}?type=T       unlock (&recursive=true: every lock of type T beneath)
//	GET    /api/v1/check/{path...}?type=T       200 free, 423 locked (&recursive=false: leaf only)
//
// Every request needs "Authorization: Bearer <token>" (or, with WithCaller,
// whatever the server that mounts the handler verifies). Errors are
// {"error": "...", "code": "..."} with the status and code StatusOf gives
// them (or, with WithErrorWriter, the mounting server's answer); a locked
// response is a CheckResponse, with error and code Locked.

// LockRequest is the body of POST /api/v1/locks: a lock, with its expiry
// given either as expires_at (in the lock) or as a duration such as "90m".
type LockRequest struct {
	lock.Lock
	Duration string `json:"duration,omitempty"`
}

// UnmarshalJSON reads the lock fields and the duration.
func (r *LockRequest) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &r.Lock); err != nil {
		return err
	}
	var d struct {
		Duration string `json:"duration"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	r.Duration = d.Duration
	return nil
}

// MarshalJSON writes the lock fields and the duration.
func (r LockRequest) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Lock)
	if err != nil || r.Duration == "" {
		return b, err
	}
	d, err := json.Marshal(r.Duration)
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], `,"duration":`...), append(d, '}')...), nil
}

// LockResponse is the answer to POST /api/v1/locks and GET /api/v1/locks/{path}.
type LockResponse struct {
	Lock    lock.Lock `json:"lock"`
	Message string    `json:"message,omitempty"`
}

// ListResponse is the answer to GET /api/v1/locks and to the DELETEs.
type ListResponse struct {
	Locks []lock.Lock `json:"locks"`
}

// CheckResponse is the answer to GET /api/v1/check/{path} and the body of
// every 423 response.
type CheckResponse struct {
	Path     string      `json:"path"`
	Type     lock.Type   `json:"type"`
	Locked   bool        `json:"locked"`
	Locks    []lock.Lock `json:"locks"`
	Messages []string    `json:"messages"`
	// Error and Code are those of every error answer, set on a 423: what
	// is locked, for people, and CodeLocked.
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
}

// errorResponse is every error answer but a 423.
type errorResponse struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// maxBody caps request bodies.
const maxBody = 64 << 10

// Handler serves the lock REST API.
type Handler struct {
	svc    *lock.Service
	token  []byte
	caller func(*http.Request) (lock.Caller, error)
	errors func(http.ResponseWriter, error)
	loc    *time.Location
	mux    *http.ServeMux
}

// NewHandler returns the REST API over svc. Every request must carry token
// as a bearer token, unless token is "" and WithCaller is given: then the
// server mounting the handler authenticates, and the caller it verified is
// the author of the locks taken and the only one (with lock.Caller.Admin, anyone)
// who may remove them. Messages in responses use the server's local time.
func NewHandler(svc *lock.Service, token string, opts ...Option) (*Handler, error) {
	o, err := newOptions("NewHandler", opts, optCaller, optErrorWriter)
	if err != nil {
		return nil, fmt.Errorf("creating lock API: %w", err)
	}
	if svc == nil {
		return nil, errors.New("creating lock API: service is required")
	}
	if token == "" && o.caller == nil {
		return nil, errors.New("creating lock API: a bearer token (or WithCaller) is required")
	}
	h := &Handler{svc: svc, token: []byte(token), caller: o.caller, errors: o.errorWriter, loc: time.Local, mux: http.NewServeMux()}
	if h.errors == nil {
		h.errors = h.writeError
	}
	h.mux.HandleFunc("GET /api/v1/locks", h.list)
	h.mux.HandleFunc("POST /api/v1/locks", h.lock)
	h.mux.HandleFunc("DELETE /api/v1/locks", h.prune)
	h.mux.HandleFunc("GET /api/v1/locks/{path...}", h.get)
	h.mux.HandleFunc("DELETE /api/v1/locks/{path...}", h.unlock)
	h.mux.HandleFunc("GET /api/v1/check/{path...}", h.check)
	return h, nil
}

// Routes returns the patterns ("METHOD /path") to mount the Handler at on a
// server's mux, without stripping any prefix: for _, r := range h.Routes() { mux.Handle(r, h) }.
func (h *Handler) Routes() []string {
	return []string{"GET /api/v1/locks", "POST /api/v1/locks", "DELETE /api/v1/locks",
		"GET /api/v1/locks/{path...}", "DELETE /api/v1/locks/{path...}", "GET /api/v1/check/{path...}"}
}

// ServeHTTP authenticates the request (unless the caller comes from
// WithCaller and no token was given) and routes it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(h.token) == 0 {
		h.mux.ServeHTTP(w, r)
		return
	}
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), h.token) != 1 {
		h.fail(w, errBadToken)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client is gone if this fails
}

// fail answers err: a 423 with the locks when locks refused the request
// (the lock API's answer about locks, whoever serves it), else as the
// handler's error writer says (writeError, or WithErrorWriter's).
func (h *Handler) fail(w http.ResponseWriter, err error) {
	var le *lock.LockedError
	if errors.As(err, &le) {
		cr := h.checkResponse(le.Path, le.Type, le.Locks)
		cr.Error, cr.Code = err.Error(), CodeLocked
		writeJSON(w, http.StatusLocked, cr)
		return
	}
	h.errors(w, err)
}

func (h *Handler) checkResponse(path string, t lock.Type, locks []lock.Lock) CheckResponse {
	msgs := make([]string, len(locks))
	for i, l := range locks {
		msgs[i] = l.BlockingMessage(h.loc)
	}
	cr := CheckResponse{Path: path, Type: t, Locked: len(locks) > 0, Locks: locks, Messages: msgs}
	if cr.Locked {
		cr.Error, cr.Code = (&lock.LockedError{Path: path, Type: t, Locks: locks}).Error(), CodeLocked
	}
	return cr
}

func boolParam(r *http.Request, name string, def bool) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid(fmt.Errorf("query parameter %s=%q: want true or false", name, v))
	}
	return b, nil
}

func typeParam(r *http.Request, def lock.Type) (lock.Type, error) {
	v := r.URL.Query().Get("type")
	if v == "" {
		if def == "" {
			return "", invalid(errors.New("query parameter type is required: the type of the lock to remove"))
		}
		return def, nil
	}
	t, err := lock.ParseType(v)
	if err != nil {
		return "", invalid(fmt.Errorf("query parameter type: %w", err))
	}
	return t, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	ls, err := h.svc.List(r.Context(), r.URL.Query().Get("path"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ListResponse{Locks: ls})
}

func (h *Handler) lock(w http.ResponseWriter, r *http.Request) {
	var req LockRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		if tooBig := new(http.MaxBytesError); errors.As(err, &tooBig) {
			h.fail(w, &bodyError{msg: fmt.Sprintf("decoding lock request: the body is larger than %d bytes", maxBody), cause: tooBig})
			return
		}
		h.fail(w, invalid(fmt.Errorf("decoding lock request: %w", err)))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		h.fail(w, invalid(errors.New("decoding lock request: data after the JSON object")))
		return
	}
	l := req.Lock
	if req.Duration != "" {
		if !l.ExpiresAt.IsZero() {
			h.fail(w, invalid(errors.New("duration and expires_at are mutually exclusive")))
			return
		}
		d, err := lock.ParseDuration(req.Duration)
		if err != nil {
			h.fail(w, invalid(err))
			return
		}
		l.ExpiresAt = h.svc.Now().Add(d)
	}
	if p, err := lock.NormalizePath(l.Path); err == nil {
		l.Path = p
		l.Default(nil) // env fields from the path when the client sent none
	}
	var got lock.Lock
	var err error
	if h.caller != nil {
		// The author is who the server verified, whatever the body says, and
		// the rules for verified callers apply (lock.Agent.Lock).
		c, cerr := h.caller(r)
		if cerr != nil {
			h.fail(w, fmt.Errorf("identifying the caller: %w", cerr))
			return
		}
		got, err = h.svc.For(c).Lock(r.Context(), l)
	} else {
		if err := lock.CheckReservedAuthor(l.Author); err != nil {
			h.fail(w, invalid(err))
			return
		}
		got, err = h.svc.Lock(r.Context(), l)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, LockResponse{Lock: got, Message: got.LockedMessage(h.loc)})
}

func (h *Handler) prune(w http.ResponseWriter, r *http.Request) {
	expired, err := boolParam(r, "expired", false)
	if err != nil {
		h.fail(w, err)
		return
	}
	if !expired {
		h.fail(w, invalid(errors.New("DELETE /api/v1/locks only prunes: add expired=true (remove a lock with DELETE /api/v1/locks/{path}?type=...)")))
		return
	}
	ls, err := h.svc.Prune(r.Context(), r.URL.Query().Get("path"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ListResponse{Locks: ls})
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	var t lock.Type
	if r.URL.Query().Has("type") {
		var err error
		if t, err = typeParam(r, ""); err != nil {
			h.fail(w, err)
			return
		}
	}
	l, err := h.svc.Get(r.Context(), r.PathValue("path"))
	if err == nil && t != "" && l.Type != t {
		err = fmt.Errorf("getting lock %s: %w of type %s (it is locked for %s)", l.Path, lock.ErrNotFound, t, l.Type.Friendly())
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, LockResponse{Lock: l})
}

func (h *Handler) unlock(w http.ResponseWriter, r *http.Request) {
	t, err := typeParam(r, "")
	if err != nil {
		h.fail(w, err)
		return
	}
	recursive, err := boolParam(r, "recursive", false)
	if err != nil {
		h.fail(w, err)
		return
	}
	var ls []lock.Lock
	if h.caller != nil {
		c, cerr := h.caller(r)
		if cerr != nil {
			h.fail(w, fmt.Errorf("identifying the caller: %w", cerr))
			return
		}
		ls, err = h.svc.For(c).Unlock(r.Context(), r.PathValue("path"), t, recursive)
	} else {
		ls, err = h.svc.Unlock(r.Context(), r.PathValue("path"), t, recursive)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ListResponse{Locks: ls})
}

func (h *Handler) check(w http.ResponseWriter, r *http.Request) {
	t, err := typeParam(r, lock.Deploy)
	if err != nil {
		h.fail(w, err)
		return
	}
	recursive, err := boolParam(r, "recursive", true)
	if err != nil {
		h.fail(w, err)
		return
	}
	path := r.PathValue("path")
	ls, err := h.svc.Check(r.Context(), path, t, recursive)
	if err != nil {
		h.fail(w, err)
		return
	}
	p, _ := lock.NormalizePath(path)
	code := http.StatusOK
	if len(ls) > 0 {
		code = http.StatusLocked
	}
	writeJSON(w, code, h.checkResponse(p, t, ls))
}
