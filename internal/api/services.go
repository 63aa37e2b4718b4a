package api

import (
	"net/http"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// ServiceResponse is the answer to GET /api/v1/services/{name}: every
// environment and target the service is in, what runs there and since when.
type ServiceResponse struct {
	Service    string             `json:"service"`
	Placements []status.Placement `json:"placements"`
}

func (h *handlers) getService(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if len(name) > 253 {
		fail(w, refuse(kindBadRequest, "service name is %d bytes long; at most 253 are accepted", len(name)))
		return
	}
	envs := make([]*status.Environment, 0)
	for _, env := range h.b.EnvironmentNames() {
		v, err := h.b.Environment(r.Context(), env)
		if err != nil {
			fail(w, err)
			return
		}
		envs = append(envs, v)
	}
	out := ServiceResponse{Service: name, Placements: []status.Placement{}}
	for _, p := range status.Where(envs, name) {
		if p.Service == name {
			out.Placements = append(out.Placements, p)
		}
	}
	if len(out.Placements) == 0 {
		fail(w, refuse(kindUnknownService, "no service %q in any environment (%v)", name, h.b.EnvironmentNames()))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// MatrixResponse is the answer to GET /api/v1/matrix.
type MatrixResponse = status.Matrix

func (h *handlers) getMatrix(w http.ResponseWriter, r *http.Request) {
	var envs []*status.Environment
	for _, env := range h.order(r.Context()) {
		v, err := h.b.Environment(r.Context(), env)
		if err != nil {
			fail(w, err)
			return
		}
		envs = append(envs, v)
	}
	m := status.NewMatrix(envs, time.UTC)
	if h.o.promotions != nil {
		m.Promotions = h.o.promotions(r.Context())
	}
	writeJSON(w, http.StatusOK, m)
}
