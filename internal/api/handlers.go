package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/httpserve"
)

// handlers are the API's routes over the Backend (environments.go,
// services.go, dora.go, rollback.go, breakglass.go, pipeline.go): each
// reads or decides through b and answers through the one error table
// (errors.go).
type handlers struct {
	b Backend
	o *options
}

// readyz answers whether this replica is ready, and its role.
func (h *handlers) readyz(w http.ResponseWriter, r *http.Request) {
	leading, err := h.b.Ready(r.Context())
	if err != nil {
		// The cause (Kubernetes' error text, names of namespaces) is for the operator's log, not for whoever probes.
		h.o.log.Error(err, "not ready")
		fail(w, refuse(kindUnavailable, "not ready"))
		return
	}
	role := "standby"
	if leading {
		role = "leader"
	}
	if hd, ok := h.b.(holder); ok {
		if envs := hd.Held(); envs != nil {
			role = "holds " + strings.Join(envs, ", ")
		}
	}
	_, _ = fmt.Fprintf(w, "ok (%s)\n", role)
}

func writeJSON(w http.ResponseWriter, code int, v any) { httpserve.WriteJSON(w, code, v) }
