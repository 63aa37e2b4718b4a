package ui

import (
	"net/http"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/api"
)

// TestErrorStatusIsTheAPIs: an environment the configuration does not name
// is the API's 404 on the page too, through the one table (api.StatusOf,
// as internal/cli wires it); without it the page knows no error's status
// and answers 500.
func TestErrorStatusIsTheAPIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want int
	}{
		{name: "the API's table", opts: []Option{WithDemoLogin("demo"), WithErrorStatus(api.StatusOf)}, want: http.StatusNotFound},
		{name: "no table", opts: []Option{WithDemoLogin("demo")}, want: http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := signedIn(t, serve(t, newBackend(t), tc.opts...))
			if code, body := b.get("/environments/nowhere"); code != tc.want {
				t.Errorf("GET /environments/nowhere = %d, want %d:\n%s", code, tc.want, body)
			}
		})
	}
	if _, err := New(newBackend(t), WithErrorStatus(nil)); err == nil {
		t.Error("a nil error status was accepted")
	}
}
