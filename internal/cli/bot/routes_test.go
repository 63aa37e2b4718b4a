package bot

import (
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// TestPrbotRoutesDocumented fails when prbot serve has a route that
// docs/reference/api.md does not document under "### prbot serve: METHOD /path", and
// when it documents one prbot serve does not have (default configuration,
// with the keyless bump API).
func TestPrbotRoutesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/reference/api.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### prbot serve: ([A-Z]+ /\S*)$`).FindAllStringSubmatch(string(b), -1) {
		docs[m[1]] = false
	}
	c, err := config.ParsePrbot([]byte("github: {owner: acme, repo: manifests, tokenFile: /t, webhookSecretFile: /s}\n" +
		"oidc:\n  issuers:\n    - {url: https://token.actions.githubusercontent.com, audience: stagehand, claims: github}\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := http.NotFoundHandler()
	for _, r := range prbotRoutes(c, h, h) {
		if _, ok := docs[r.pattern]; !ok {
			t.Errorf("prbot serve serves %q, but docs/reference/api.md has no \"### prbot serve: %s\" entry", r.pattern, r.pattern)
		}
		docs[r.pattern] = true
	}
	for d, served := range docs {
		if !served {
			t.Errorf("docs/reference/api.md documents \"### prbot serve: %s\", which prbot serve does not serve", d)
		}
	}
	if len(prbotRoutes(c, h, nil)) != len(docs)-1 {
		t.Errorf("without oidc prbot serve has %d routes, want all but the bump API's", len(prbotRoutes(c, h, nil)))
	}
}
