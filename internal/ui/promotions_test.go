package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestOverviewPipeline: the overview's columns follow pipeline.yaml's
// stages, not names, and under the matrix it says what each promotion
// waits for.
func TestOverviewPipeline(t *testing.T) {
	waits := []status.Promotion{{From: "staging", To: "prod", Says: "web soaking: healthy in staging for 20m0s of 1h0m0s"}}
	base := serve(t, newBackend(t), WithDemoLogin("demo"),
		WithStages(func(context.Context) []string { return []string{"staging", "prod"} }),
		WithPromotions(func(context.Context) []status.Promotion { return waits }))
	code, body := signedIn(t, base).get("/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d %s", code, body)
	}
	staging, prod := strings.Index(body, `<th scope="col" data-env="staging">`), strings.Index(body, `<th scope="col" data-env="prod">`)
	if staging < 0 || prod < 0 || staging > prod {
		t.Errorf("columns: staging at %d, prod at %d; want staging first", staging, prod)
	}
	want := `<li data-from="staging" data-to="prod"><strong>staging → prod</strong>: web soaking: healthy in staging for 20m0s of 1h0m0s</li>`
	if !strings.Contains(body, want) {
		t.Errorf("overview lacks %q:\n%s", want, body)
	}

	// Without a pipeline: no promotions, the configuration's order.
	code, body = signedIn(t, serve(t, newBackend(t), WithDemoLogin("demo"))).get("/")
	if code != http.StatusOK || strings.Contains(body, `id="promotions"`) {
		t.Errorf("GET / without a pipeline = %d, promotions shown: %v", code, strings.Contains(body, `id="promotions"`))
	}
}
