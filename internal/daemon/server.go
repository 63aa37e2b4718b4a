package daemon

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// maxAPIBody caps request bodies of the approval endpoints.
const maxAPIBody = 64 << 10

// Handler returns the daemon's HTTP API:
//
//	GET  /healthz, /readyz, /metrics                     (no token)
//	POST /webhook/github                                  (HMAC-signed by GitHub)
//	GET  /api/v1/environments                             (bearer token, every replica)
//	GET  /api/v1/environments/{env}[/layout|/history]     (bearer token, every replica)
//	POST /api/v1/environments/{env}/approve|reject        (bearer token, every replica)
//	     /api/v1/locks..., /api/v1/check/...              (bearer token, pkg/lock's handler)
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", d.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics.Registry, promhttp.HandlerOpts{Registry: d.metrics.Registry}))
	if d.webhook != nil {
		mux.Handle("POST /webhook/github", d.webhook)
	}
	api := http.NewServeMux()
	api.HandleFunc("GET /api/v1/environments", d.listEnvironments)
	api.HandleFunc("GET /api/v1/environments/{env}", d.getEnvironment)
	api.HandleFunc("GET /api/v1/environments/{env}/layout", d.getLayout)
	api.HandleFunc("GET /api/v1/environments/{env}/history", d.getHistory)
	api.HandleFunc("POST /api/v1/environments/{env}/approve", d.decisionHandler(true))
	api.HandleFunc("POST /api/v1/environments/{env}/reject", d.decisionHandler(false))
	if d.locks != nil {
		for _, route := range d.locks.Routes() {
			api.Handle(route, d.locks)
		}
	}
	mux.Handle("/api/", d.authenticate(api))
	return mux
}

// authenticate admits requests carrying the configured bearer token
// (compared in constant time) and answers 401 to everything else.
func (d *Daemon) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.token == "" {
			writeError(w, http.StatusServiceUnavailable, "the API is disabled: no token configured (server.apiTokenFile)")
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(d.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stagehand"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Daemon) readyz(w http.ResponseWriter, r *http.Request) {
	if !d.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, "not ready: state not loaded yet")
		return
	}
	if _, err := d.store.client.CoreV1().ConfigMaps(d.store.namespace).List(r.Context(), listOne); err != nil {
		writeError(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	role := "standby"
	if d.leading.Load() {
		role = "leader"
	}
	_, _ = fmt.Fprintf(w, "ok (%s)\n", role)
}

func (d *Daemon) listEnvironments(w http.ResponseWriter, r *http.Request) {
	out := make([]EnvironmentView, 0, len(d.envNames))
	for _, env := range d.envNames {
		v, err := d.Environment(r.Context(), env)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		v.Layout = nil
		v.History = nil
		out = append(out, *v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"environments": out})
}

func (d *Daemon) getEnvironment(w http.ResponseWriter, r *http.Request) {
	v, ok := d.environmentOr404(w, r)
	if !ok {
		return
	}
	v.Layout = nil
	v.History = nil
	writeJSON(w, http.StatusOK, v)
}

func (d *Daemon) getLayout(w http.ResponseWriter, r *http.Request) {
	v, ok := d.environmentOr404(w, r)
	if !ok {
		return
	}
	if v.Layout == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no layout for environment %q yet: it has not been resolved", v.Name))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"environment": v.Name, "revision": v.Revision, "layout": v.Layout})
}

func (d *Daemon) getHistory(w http.ResponseWriter, r *http.Request) {
	v, ok := d.environmentOr404(w, r)
	if !ok {
		return
	}
	h := v.History
	if h == nil {
		h = []approval.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"environment": v.Name, "history": h})
}

func (d *Daemon) environmentOr404(w http.ResponseWriter, r *http.Request) (*EnvironmentView, bool) {
	env := r.PathValue("env")
	v, err := d.Environment(r.Context(), env)
	switch {
	case errors.Is(err, approval.ErrUnknownEnvironment):
		writeError(w, http.StatusNotFound, err.Error())
		return nil, false
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return nil, false
	}
	return v, true
}

// DecisionRequest is the body of POST .../approve and .../reject.
type DecisionRequest struct {
	PlanHash string `json:"planHash"`
	// Approver names who decided; "api" when empty.
	Approver string `json:"approver,omitempty"`
	// Reason is an optional note for a rejection.
	Reason string `json:"reason,omitempty"`
}

// DecisionResponse is the answer to an accepted approval or rejection.
type DecisionResponse struct {
	Environment string `json:"environment"`
	Revision    string `json:"revision"`
	PlanHash    string `json:"planHash"`
	Status      string `json:"status"` // "approved" (apply queued) or "rejected"
	Message     string `json:"message"`
}

func (d *Daemon) decisionHandler(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		env := r.PathValue("env")
		var req DecisionRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAPIBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "decoding request body: "+err.Error()+`; want {"planHash": "..."}`)
			return
		}
		if req.PlanHash == "" {
			writeError(w, http.StatusBadRequest, `planHash is required; want {"planHash": "..."}`)
			return
		}
		who := req.Approver
		if who == "" {
			who = "api"
		}
		var (
			p   *approval.Pending
			err error
		)
		if approve {
			p, err = d.Approve(r.Context(), env, req.PlanHash, who)
		} else {
			p, err = d.Reject(r.Context(), env, req.PlanHash, who, req.Reason)
		}
		var np *approval.NotPendingError
		switch {
		case errors.Is(err, approval.ErrUnknownEnvironment):
			writeError(w, http.StatusNotFound, err.Error())
		case errors.As(err, &np):
			writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "pending": np.Pending})
		case err != nil:
			writeError(w, http.StatusInternalServerError, err.Error())
		case approve:
			writeJSON(w, http.StatusAccepted, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "approved", Message: fmt.Sprintf("approved by %s; applying revision %s to %s", who, short(p.Revision), env)})
		default:
			writeJSON(w, http.StatusOK, DecisionResponse{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash,
				Status: "rejected", Message: fmt.Sprintf("rejected by %s; revision %s will not be applied to %s", who, short(p.Revision), env)})
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
